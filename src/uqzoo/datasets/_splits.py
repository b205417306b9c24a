"""Spatial train/test splits of a labelled image, shared by ``from_hsi`` and ``indian-pines``.

Neighbouring pixels of a hyperspectral image are not independent samples: the
sensor's point-spread function spreads each ground spot over several pixels,
and land cover is spatially autocorrelated, so a test pixel next to a training
pixel is close to a copy of it. A random pixel split therefore overstates how
well a model generalises to unseen places, often by a wide margin (Hänsch, Ley
& Hellwich 2017; Lange et al. 2018; Nalepa, Myller & Kawulok 2019). Splitting
by region (halves, blocks) and dropping the training pixels within a *guard
band* of the test region removes most of that leak.

All functions work on a *class-code image*: an int array of shape (H, W)
holding each labelled pixel's class 0..K-1 and -1 for unlabelled pixels.

The references are listed in :func:`uqzoo.datasets.from_hsi`, the public
entry to these splits.
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_grid", "blocked_test_mask", "guard_band", "half_test_mask",
           "stratified_test_mask"]

# Grids tried by stratified_test_mask, coarse to fine: cells per image side.
# Large blocks keep the guard band's cost low; finer ones are tried only when a
# class (a few fields of targets) sits in too few blocks to reach both sides.
STRATIFIED_GRIDS = (5, 10, 20)
# Pixels of a class on each side that make it judgeable: the data-fit warnings'
# threshold (fewer than 20 training rows or test targets, uqzoo._data_checks).
MIN_SIDE = 20


def block_grid(shape: tuple[int, int], block_size: tuple[int, int]) -> np.ndarray:
    """The block index of every pixel when an image is cut into rectangular blocks.

    Parameters
    ----------
    shape : (H, W)
    block_size : (block_height, block_width)
        Blocks at the right and bottom edges may be smaller.

    Returns
    -------
    int64 array of shape (H, W)
        Row-major block numbers 0..n_blocks-1.

    Example
    -------
    >>> block_grid((3, 4), (2, 2))
    array([[0, 0, 1, 1],
           [0, 0, 1, 1],
           [2, 2, 3, 3]])
    """
    height, width = shape
    block_height, block_width = block_size
    blocks_per_row = -(-width // block_width)
    return ((np.arange(height)[:, None] // block_height) * blocks_per_row
            + np.arange(width)[None, :] // block_width).astype(np.int64)


def half_test_mask(codes: np.ndarray, axis: int, boundary: int) -> np.ndarray:
    """Labelled pixels at or beyond ``boundary`` along ``axis`` (0 rows, 1 columns).

    Returns a boolean (H, W) array: the test pixels of a left-right
    (``axis=1``) or top-bottom (``axis=0``) split.
    """
    position = np.arange(codes.shape[axis]) >= boundary
    beyond = position[None, :] if axis == 1 else position[:, None]
    return (codes >= 0) & beyond


def blocked_test_mask(codes: np.ndarray, test_size: float, block_size: tuple[int, int],
                      seed: int, guard: int = 0) -> np.ndarray:
    """Whole blocks of labelled pixels chosen as test set, roughly stratified.

    Classes are served rarest first, each visiting the blocks that hold it in
    one seeded random order. A block goes to test while the class's test count
    is below ``test_size`` of its total and no class in the block would pass
    its own share. A class that still has no test pixel then takes the block
    holding fewest of its pixels, whatever the shares. A block is never taken
    if it, with its guard band, would remove the last training pixel of any
    class. Serving rare classes first gives a class of a few objects (three
    planes in a scene) test pixels before the common classes have used up the
    test share; the common classes then stay within theirs, so each class's
    test share is at most ``test_size`` unless reaching one test pixel
    needs more.

    Parameters
    ----------
    codes : int array of shape (H, W)
        Class 0..K-1 of each labelled pixel, -1 for unlabelled.
    test_size : float in (0, 1)
        Target share of each class's pixels held out.
    block_size : (block_height, block_width)
    seed : int
        Seed of the block order.
    guard : int >= 0
        Width of the guard band (see :func:`guard_band`) that will be dropped
        from training, counted when checking that every class keeps a
        training pixel.

    Returns
    -------
    bool array of shape (H, W)
        True at the labelled pixels of the test blocks. A class may have no
        test pixel when every block holding it is needed for its training
        pixels (the caller checks).

    Example
    -------
    >>> codes = np.zeros((4, 4), np.int64); codes[:, 2:] = 1
    >>> test = blocked_test_mask(codes, 0.25, (2, 2), seed=0)
    >>> [int(test[codes == k].sum()) for k in (0, 1)]
    [4, 4]
    """
    height, width = codes.shape
    block_height, block_width = block_size
    blocks_per_row = -(-width // block_width)
    labelled = codes >= 0
    block_id = block_grid(codes.shape, block_size)
    n_classes = int(codes.max()) + 1 if labelled.any() else 0
    n_blocks = int(block_id.max()) + 1
    counts = np.zeros((n_blocks, n_classes), np.int64)
    np.add.at(counts, (block_id[labelled], codes[labelled]), 1)
    total = counts.sum(axis=0)
    quota = test_size * total
    order = np.random.default_rng(seed).permutation(np.flatnonzero(counts.sum(axis=1)))
    is_test = np.zeros(n_blocks, bool)
    test_count = np.zeros(n_classes, np.int64)
    # Pixels lost to training so far (test pixels and their guard band), and
    # the labelled pixels of each class still available for training.
    removed = np.zeros(codes.shape, bool)
    available = total.copy()

    def take(b: int) -> bool:
        """Make block b a test block unless that leaves a class without training."""
        nonlocal test_count
        r0, c0 = (b // blocks_per_row) * block_height, (b % blocks_per_row) * block_width
        window = (slice(max(r0 - guard, 0), min(r0 + block_height + guard, height)),
                  slice(max(c0 - guard, 0), min(c0 + block_width + guard, width)))
        in_block = (block_id[window] == b) & labelled[window]
        lost = in_block | guard_band(in_block, guard)
        lost &= labelled[window] & ~removed[window]
        lost_counts = np.bincount(codes[window][lost], minlength=n_classes)
        if np.any((available - lost_counts < 1) & (total > 0)):
            return False
        removed[window] |= lost
        available[:] -= lost_counts
        is_test[b] = True
        test_count = test_count + counts[b]
        return True

    for k in np.argsort(total, kind="stable"):
        for b in order:
            if test_count[k] >= quota[k]:
                break
            if is_test[b] or counts[b, k] == 0:
                continue
            present = counts[b] > 0
            if np.all(test_count[present] + counts[b, present] <= quota[present]):
                take(b)
        if test_count[k] == 0:
            holding = [b for b in order if counts[b, k] > 0 and not is_test[b]]
            for b in sorted(holding, key=lambda b: counts[b, k]):   # stable: seeded ties
                if take(b):
                    break
    return labelled & is_test[block_id]


def stratified_test_mask(codes: np.ndarray, test_size: float, seed: int, guard: int = 0
                         ) -> tuple[np.ndarray, tuple[int, int]]:
    """Whole blocks as test set, every class on both sides where the scene allows.

    :func:`blocked_test_mask` on a grid of 5 × 5 blocks; when that leaves a
    class without a training or a test pixel (its pixels sit in too few
    blocks), and to give each class up to ``MIN_SIDE`` (20) pixels on its
    smaller side, the same on 10 × 10 and 20 × 20 blocks: the grid with the
    most classes on both sides wins, then the one with most pixels on each
    class's smaller side (counted up to 20), then the coarser.
    The counts are taken after the guard band, so a fine grid whose band eats
    a class's training pixels loses to a coarser one.

    Parameters
    ----------
    codes, test_size, seed
        As :func:`blocked_test_mask`.
    guard : int >= 0

    Returns
    -------
    (bool array of shape (H, W), (block_height, block_width))
        The test pixels and the block size used.

    Example
    -------
    >>> codes = np.zeros((40, 40), np.int64); codes[1:3, 1:3] = 1; codes[9:11, 1:3] = 1
    >>> test, block = stratified_test_mask(codes, 0.5, seed=0, guard=1)
    >>> block, int(test[codes == 1].sum()) > 0
    ((8, 8), True)
    """
    height, width = codes.shape
    labelled = codes >= 0
    n_classes = int(codes.max()) + 1 if labelled.any() else 0
    best: tuple | None = None
    for cells in STRATIFIED_GRIDS:
        block = (-(-height // cells), -(-width // cells))
        test = blocked_test_mask(codes, test_size, block, seed, guard=guard)
        train = labelled & ~test & ~guard_band(test, guard)
        n_test = np.bincount(codes[test], minlength=n_classes)
        n_train = np.bincount(codes[train], minlength=n_classes)
        # Classes on both sides first, then pixels on the smaller side of each
        # class up to MIN_SIDE (beyond that a class is judged well enough);
        # ties go to the coarser grid, which loses fewer pixels to the guard.
        score = (int(np.sum((n_test > 0) & (n_train > 0))),
                 int(np.minimum(np.minimum(n_test, n_train), MIN_SIDE).sum()))
        if best is None or score > best[0]:
            best = (score, test, block)
    assert best is not None
    return best[1], best[2]


def guard_band(test: np.ndarray, guard: int) -> np.ndarray:
    """Pixels within Chebyshev distance ``guard`` of a test pixel, test pixels excluded.

    Training pixels in this band are dropped: they touch the test region
    through the point-spread function and spatial autocorrelation.

    Parameters
    ----------
    test : bool array of shape (H, W)
    guard : int >= 0
        Width of the band in pixels; 0 gives an empty band.

    Returns
    -------
    bool array of shape (H, W)

    Example
    -------
    >>> test = np.zeros((5, 5), bool); test[2, 2] = True
    >>> guard_band(test, 1).astype(int)
    array([[0, 0, 0, 0, 0],
           [0, 1, 1, 1, 0],
           [0, 1, 0, 1, 0],
           [0, 1, 1, 1, 0],
           [0, 0, 0, 0, 0]])
    """
    if guard <= 0 or not test.any():
        return np.zeros(test.shape, bool)
    from scipy.ndimage import maximum_filter

    # A (2g+1) × (2g+1) maximum filter is a dilation by the Chebyshev ball of radius g.
    near = maximum_filter(test.astype(np.uint8), size=2 * guard + 1, mode="constant",
                          cval=0).astype(bool)
    return near & ~test

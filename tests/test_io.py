"""Saving and loading posteriors: bit-exact round trips of real fits, clear
errors for truncated or foreign files, and a save that cannot destroy a good
file: atomic, durable, polite to the file system (issue 9). Hostile files are
in test_io_hostile.py."""

import concurrent.futures
import errno
import os
import signal
import stat
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import xarray as xr

import uqzoo as uz
from uqzoo import _files, io
from uqzoo.errors import OutputPathError
from uqzoo.testing import tiny_data


@pytest.fixture(scope="module")
def fitted():
    """Real posteriors from the tiny configs the conformance suite uses (compiled once)."""
    data = tiny_data()
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        return {
            "hmc": uz.fit("hmc", spec, data, seed=3, num_warmup=20, num_samples=20,
                          num_chains=2, progress_bar=False),
            "mfvi": uz.fit("mfvi", spec, data, seed=3, num_steps=200, num_samples=20,
                           progress_bar=False),
        }


def assert_identical(a, b):
    assert (a.method, a.seed, a.config, a.spec, a.sample_shape, a.converged, a.warnings,
            a.predictive) == (b.method, b.seed, b.config, b.spec, b.sample_shape, b.converged,
                              b.warnings, b.predictive)
    for mine, theirs in ((a.draws, b.draws), (a.sample_stats, b.sample_stats)):
        assert mine.keys() == theirs.keys()
        for key in mine:
            assert mine[key].dtype == theirs[key].dtype, key
            np.testing.assert_array_equal(mine[key], theirs[key])
    assert a.diagnostics.keys() == b.diagnostics.keys()
    for key, value in a.diagnostics.items():
        other = b.diagnostics[key]
        assert type(value) is type(other), key
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype, key
            np.testing.assert_array_equal(value, other)
        elif value == value:           # NaN scalars compare unequal to themselves
            assert value == other, key


@pytest.mark.parametrize("method", ["hmc", "mfvi"])
def test_round_trip_is_bit_exact(fitted, tmp_path, method):
    post = fitted[method]
    post.save(tmp_path / "post.nc")
    assert_identical(post, uz.load_posterior(tmp_path / "post.nc"))


def test_datatree_has_the_arviz_groups(fitted):
    tree = fitted["hmc"].to_datatree()
    assert {"posterior", "sample_stats"} <= set(tree.children)
    weight = tree["posterior"]["layers.0.weight"]
    assert weight.dims[:2] == ("chain", "draw")
    assert weight.shape[:2] == fitted["hmc"].sample_shape
    assert tree["sample_stats"]["diverging"].dims == ("chain", "draw")


def test_truncated_file_is_a_clear_error(fitted, tmp_path):
    path = tmp_path / "post.nc"
    fitted["hmc"].save(path)
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2])
    with pytest.raises(uz.FileFormatError, match="truncated or foreign"):
        uz.load_posterior(path)


def test_foreign_netcdf_is_a_clear_error(tmp_path):
    path = tmp_path / "foreign.nc"
    xr.Dataset({"temperature": ("time", np.arange(3.0))}).to_netcdf(path, engine="h5netcdf")
    with pytest.raises(uz.FileFormatError, match="not a uqzoo posterior"):
        uz.load_posterior(path)


def test_text_file_and_missing_file_are_clear_errors(tmp_path):
    path = tmp_path / "notes.nc"
    path.write_text("not a netCDF file")
    with pytest.raises(uz.FileFormatError, match="not a readable netCDF"):
        uz.load_posterior(path)
    with pytest.raises(uz.FileFormatError, match="no posterior file"):
        uz.load_posterior(tmp_path / "absent.nc")


class _FailingOs:
    """``os`` as ``uqzoo.io`` sees it, with ``write`` failing like a full disk (or Ctrl-C)."""

    def __init__(self, exc):
        self.exc = exc
        self.events = []

    def write(self, fd, data):
        raise self.exc

    def __getattr__(self, name):
        return getattr(os, name)


class _RecordingOs:
    """``os`` as ``uqzoo.io`` sees it, recording the order of writes, fsyncs and renames."""

    def __init__(self):
        self.events = []

    def write(self, fd, data):
        self.events.append("write")
        return os.write(fd, data)

    def fsync(self, fd):
        self.events.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        return os.fsync(fd)

    def replace(self, src, dst):
        self.events.append("replace")
        return os.replace(src, dst)

    def link(self, src, dst, **kwargs):
        self.events.append("link")
        return os.link(src, dst, **kwargs)

    def __getattr__(self, name):
        return getattr(os, name)


@pytest.mark.parametrize("exc, raised, needle", [
    (OSError(errno.ENOSPC, "No space left on device"), OutputPathError,
     "no space left on the device"),
    (OSError(errno.EROFS, "Read-only file system"), OutputPathError, "read-only"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), OutputPathError, "quota"),
    (KeyboardInterrupt(), KeyboardInterrupt, None),
])
def test_failed_save_leaves_the_existing_file_intact(fitted, tmp_path, monkeypatch, exc,
                                                     raised, needle):
    path = tmp_path / "post.nc"
    fitted["hmc"].save(path)
    before = path.read_bytes()
    monkeypatch.setattr(_files, "os", _FailingOs(exc))
    with pytest.raises(raised, match=needle) as info:
        fitted["mfvi"].save(path, overwrite=True)
    monkeypatch.undo()
    if raised is OutputPathError:
        assert str(path) in str(info.value) and isinstance(info.value, OSError)
        assert info.value.errno == exc.errno
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["post.nc"]      # no temporary left
    assert_identical(fitted["hmc"], uz.load_posterior(path))


def test_a_failed_write_in_a_staged_folder_names_the_folder_asked_for(tmp_path):
    # issue 25 item 8: disk full in `compare --out` named the internal staging folder
    target = tmp_path / "results"
    with pytest.raises(OutputPathError) as info:
        with io.staged_folder(target, what="--out") as staging:
            raise _files._os_failure(OSError(errno.ENOSPC, "No space left on device"),
                                     "write", staging / "report.html")
    message = str(info.value)
    assert f"could not write {str(target / 'report.html')!r}: no space left" in message
    assert ".tmp" not in message and info.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


_FILL_THE_DISK = """
import resource, signal, sys
import numpy as np
import uqzoo as uz
from uqzoo.errors import OutputPathError
spec = uz.MLPSpec(20, 2, hidden=(50,))
post = uz.Posterior(spec=spec, method="x", config={}, seed=0,
                    draws=spec.init_params(0, num=400))
# A process file-size limit makes the kernel refuse writes past it (EFBIG), as a
# full disk does (ENOSPC); ignoring SIGXFSZ turns the signal into that error.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
try:
    post.save(sys.argv[1], overwrite=True)
except OutputPathError as exc:
    print("OutputPathError:", exc)
import gc
gc.collect()
print("still alive")
"""


def test_a_disk_that_fills_up_during_save_is_a_clear_error_not_a_crash(fitted, tmp_path):
    # Before issue 9 h5netcdf wrote the file itself and its close() crashed the
    # interpreter (signal 11) at garbage collection after the OSError.
    path = tmp_path / "post.nc"
    fitted["mfvi"].save(path)
    before = path.read_bytes()
    run = subprocess.run([sys.executable, "-c", _FILL_THE_DISK, str(path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"OutputPathError: could not write {str(path)!r}" in run.stdout
    assert "still alive" in run.stdout
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["post.nc"]


def test_save_flushes_the_file_before_the_rename_and_the_folder_after(fitted, tmp_path,
                                                                      monkeypatch):
    recorder = _RecordingOs()
    monkeypatch.setattr(_files, "os", recorder)
    fitted["mfvi"].save(tmp_path / "post.nc")
    monkeypatch.undo()
    events = [e for i, e in enumerate(recorder.events) if e != "write" or
              recorder.events[i - 1:i] != ["write"]]
    # a new file is hard-linked into place (never over another), a file replaced renamed
    assert events == ["write", "fsync file", "link", "fsync dir"]
    recorder.events.clear()
    monkeypatch.setattr(_files, "os", recorder)
    fitted["mfvi"].save(tmp_path / "post.nc", overwrite=True)
    monkeypatch.undo()
    events = [e for i, e in enumerate(recorder.events) if e != "write" or
              recorder.events[i - 1:i] != ["write"]]
    assert events == ["write", "fsync file", "replace", "fsync dir"]


def test_save_into_a_missing_folder_is_a_clear_error(fitted, tmp_path):
    with pytest.raises(OutputPathError, match="does not exist"):
        fitted["mfvi"].save(tmp_path / "nowhere" / "post.nc")


def test_save_onto_a_read_only_file_system_is_a_clear_error(fitted, tmp_path, monkeypatch):
    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(_files, "os", type("Os", (), {
        "statvfs": staticmethod(lambda path: ReadOnly()),
        "__getattr__": lambda self, name: getattr(os, name)})())
    with pytest.raises(OutputPathError, match="read-only file system"):
        fitted["mfvi"].save(tmp_path / "post.nc")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_a_255_byte_name_can_be_saved_and_a_longer_one_is_a_clear_error(fitted, tmp_path):
    # The temporary file used to be named after the target, 15 characters longer.
    name = "p" * 252 + ".nc"
    fitted["mfvi"].save(tmp_path / name)
    assert_identical(fitted["mfvi"], uz.load_posterior(tmp_path / name))
    with pytest.raises(OutputPathError, match="256 bytes long"):
        fitted["mfvi"].save(tmp_path / ("p" + name))


def test_a_symlink_is_refused_and_its_target_left_as_it_is(fitted, tmp_path):
    real = tmp_path / "real.nc"
    fitted["hmc"].save(real)
    before = real.read_bytes()
    link = tmp_path / "link.nc"
    link.symlink_to(real)
    with pytest.raises(OutputPathError, match="is a symbolic link to"):
        fitted["mfvi"].save(link, overwrite=True)
    assert link.is_symlink() and real.read_bytes() == before
    dangling = tmp_path / "dangling.nc"
    dangling.symlink_to(tmp_path / "created.nc")
    with pytest.raises(OutputPathError, match="is a symbolic link to"):
        fitted["mfvi"].save(dangling)
    assert dangling.is_symlink() and not (tmp_path / "created.nc").exists()


def test_a_directory_or_fifo_is_never_replaced(fitted, tmp_path):
    folder = tmp_path / "folder.nc"
    folder.mkdir()
    with pytest.raises(OutputPathError, match="is a directory"):
        fitted["mfvi"].save(folder)
    (tmp_path / "to_folder.nc").symlink_to(folder)
    with pytest.raises(OutputPathError, match="is a symbolic link"):
        fitted["mfvi"].save(tmp_path / "to_folder.nc")
    fifo = tmp_path / "fifo.nc"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="FIFO"):
        fitted["mfvi"].save(fifo)
    assert folder.is_dir() and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.nc", "folder.nc",
                                                           "to_folder.nc"]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_a_new_file_gets_the_permissions_the_umask_gives(fitted, tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        fitted["mfvi"].save(tmp_path / "post.nc")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "post.nc").st_mode) == mode


def test_an_existing_file_keeps_its_mode(fitted, tmp_path):
    path = tmp_path / "post.nc"
    fitted["hmc"].save(path)
    os.chmod(path, 0o640)
    fitted["mfvi"].save(path, overwrite=True)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert_identical(fitted["mfvi"], uz.load_posterior(path))


def test_a_read_only_file_is_not_overwritten(fitted, tmp_path):
    path = tmp_path / "post.nc"
    fitted["hmc"].save(path)
    os.chmod(path, 0o444)
    before = path.read_bytes()
    with pytest.raises(OutputPathError, match=r"read-only \(mode 0444\)"):
        fitted["mfvi"].save(path, overwrite=True)
    assert path.read_bytes() == before and stat.S_IMODE(os.stat(path).st_mode) == 0o444


_KILLED_MID_SAVE = """
import os, sys, time
import uqzoo as uz
from uqzoo import _files
from uqzoo.errors import OutputPathError
spec = uz.MLPSpec(3, 2, hidden=(4,))
post = uz.Posterior(spec=spec, method="x", config={}, seed=0, draws=spec.init_params(0, num=3))

def hang(fd):                      # stop between writing the temporary and renaming it
    print("writing", flush=True)
    time.sleep(600)

class Os:
    fsync = staticmethod(hang)
    def __getattr__(self, name):
        return getattr(os, name)

_files.os = Os()
post.save(sys.argv[1], overwrite=True)
"""


def _temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_temporaries_of_a_save_killed_with_sigkill_are_removed_by_the_next_save(fitted,
                                                                                tmp_path):
    path = tmp_path / "post.nc"
    fitted["hmc"].save(path)
    before = path.read_bytes()
    child = subprocess.Popen([sys.executable, "-c", _KILLED_MID_SAVE, str(path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        left = _temporaries(tmp_path)
        assert len(left) == 1 and len(left[0]) < 30          # short name, not the target's
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert path.read_bytes() == before                       # the old file is intact
    orphan = tmp_path / left[0]
    # A save right away keeps the temporary: it could belong to a writer on another
    # machine sharing the folder. Once it is a minute old and its pid is gone, it goes.
    fitted["mfvi"].save(path, overwrite=True)
    assert _temporaries(tmp_path) == left
    an_hour_ago = time.time() - 3600
    os.utime(orphan, (an_hour_ago, an_hour_ago))
    # ... but never a live writer's temporary, nor a file that is not ours
    live = tmp_path / f".uqz-{os.getppid()}-abcdefgh.tmp"
    other = tmp_path / ".uqz-notours.tmp"
    for keep in (live, other):
        keep.write_bytes(b"x")
        os.utime(keep, (an_hour_ago, an_hour_ago))
    fitted["mfvi"].save(path, overwrite=True)
    assert _temporaries(tmp_path) == sorted([live.name, other.name])
    assert_identical(fitted["mfvi"], uz.load_posterior(path))


def test_concurrent_saves_to_one_path_leave_one_whole_file(fitted, tmp_path):
    path = tmp_path / "post.nc"
    posts = [fitted["hmc"], fitted["mfvi"]] * 4
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda post: post.save(path, overwrite=True), posts))
    loaded = uz.load_posterior(path)
    assert loaded.method in ("hmc", "mfvi")
    assert_identical(fitted[loaded.method], loaded)
    assert _temporaries(tmp_path) == []


def test_no_pickle_in_the_file(fitted, tmp_path):
    path = tmp_path / "post.nc"
    fitted["mfvi"].save(path)
    tree = xr.open_datatree(path, engine=io._ENGINE)
    try:
        for node in tree.subtree:
            for var in node.dataset.data_vars.values():
                assert var.dtype != object
    finally:
        tree.close()


# -- files written by the previous release (format 1, uqzoo 0.1) ------------------------
#
# tests/data/format1_*.nc were saved by uqzoo 0.1 (commit e27779d): an MC-dropout
# posterior whose rate was MLPSpec(dropout=0.2), and a 2-chain HMC posterior fit
# with num_samples=10 meaning 10 per chain. format1_X.npy / format1_expected.npy
# hold three test points and the MC-dropout predictive that release computed.

DATA = os.path.join(os.path.dirname(__file__), "data")


def test_a_format_1_mc_dropout_file_loads_with_its_rate_in_the_config():
    from _float32_reference import draws_proba64

    post = uz.load_posterior(os.path.join(DATA, "format1_mc_dropout.nc"))
    assert not hasattr(post.spec, "dropout")
    assert post.spec.prior == "iid"            # the only prior uqzoo 0.1 had
    assert post.config["dropout"] == 0.2
    assert post.diagnostics["dropout_rate"] == 0.2
    # One name per timing: the whole fit as "seconds", phases as "seconds_<phase>".
    assert post.diagnostics["seconds"] > 0 and post.diagnostics["seconds_training"] > 0
    assert not any(k.endswith("_seconds") for k in post.diagnostics)
    X = np.load(os.path.join(DATA, "format1_X.npy"))
    expected = np.load(os.path.join(DATA, "format1_expected.npy"))
    got = post.predict_proba_draws(X)
    # Both releases' float32 forwards are within the rounding bound of the exact one
    # (the old release ran on another CPU, kernel and chunking).
    exact, bound = draws_proba64(post.spec, post.draws, X)
    assert np.all(np.abs(got - exact) <= bound)
    assert np.all(np.abs(expected - exact) <= bound)


def test_a_format_1_hmc_file_counts_num_samples_in_total():
    post = uz.load_posterior(os.path.join(DATA, "format1_hmc.nc"))
    assert post.sample_shape == (2, 10)
    assert post.config["num_samples"] == post.num_draws == 20
    assert {"seconds_warmup", "seconds_sampling", "seconds"} <= set(post.diagnostics)


def test_a_saved_posterior_is_format_2_and_round_trips_without_legacy_keys(fitted, tmp_path):
    post = fitted["hmc"]
    path = tmp_path / "p.nc"
    post.save(path)
    import h5py
    with h5py.File(path, "r") as f:
        assert f.attrs["uqzoo_format"] in (b"uqzoo.posterior/2", "uqzoo.posterior/2")
        assert "dropout" not in f.attrs["spec"]

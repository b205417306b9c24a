"""Datasets: the :class:`ClassificationData` container, loaders and simulators.

``load(name, **options)`` gives a named data set (``names()`` lists them);
``from_arrays``, ``from_csv`` and ``from_hsi`` wrap users' own data;
``resample_prior`` redraws a test set at another class prior;
``with_label_noise`` flips a stated share of the training labels.
"""

from uqzoo.datasets._base import ClassificationData
from uqzoo.datasets._registry import load, names, options
from uqzoo.datasets.noise import with_label_noise
from uqzoo.datasets.resample import resample_prior
from uqzoo.datasets.user import from_arrays, from_csv, from_hsi

__all__ = [
           "ClassificationData",
           "from_arrays",
           "from_csv",
           "from_hsi",
           "load",
           "names",
           "options",
           "resample_prior",
           "with_label_noise",
]

"""Forwards of :class:`uqzoo.MLPSpec` networks over the shared parameter layout.

``uqzoo.nets.torch`` and ``uqzoo.nets.jax`` implement the same functions and
agree to float32 precision; each method uses the backend that suits it. The
backends are imported lazily so that ``import uqzoo`` stays light.
"""

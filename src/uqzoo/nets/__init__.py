"""The network, its likelihood and its prior, once per framework.

``uqzoo.nets.torch`` and ``uqzoo.nets.jax`` implement the same forwards,
likelihood and prior over the shared parameter layout, and agree to float32
precision; each method uses the backend that suits it. The Bayesian network
as a probabilistic program is written once per PPL on top of them:
``uqzoo.nets.numpyro_model`` (NumPyro: HMC, MF-VI) and
``uqzoo.nets.pyro_model`` (Pyro backends), over the latent sites of
``uqzoo.nets.sites``. The modules are imported lazily so that
``import uqzoo`` stays light.
"""

"""Mean-field VI on the 50-10-10-1 network, n = 2000, side by side in one process.

- ``uqzoo``: ``uz.fit("mfvi", ...)`` with its defaults (NumPyro SVI), wall time
  including compilation, whether its ELBO check says converged, and the test
  log-likelihood of the predictive mean;
- ``plain``: a hand-written NumPyro SVI script (``AutoNormal`` guide, Adam at
  the same step size, same number of steps, ``svi.run``);
- ``pyro``: ``backend="pyro"`` for fewer steps (time per step is the figure).

Equal work (STYLE.md rule 20, asserted): the same data, the same prior --
iid N(0, 1) on every weight and bias, the plain script's (``MLPSpec(prior="iid")``;
before issue 22 the uqzoo arm ran under the spec's default fan-in prior) -- and
the same number of full-batch SVI steps with one particle; neither arm stops
early (uqzoo's ELBO check only reads the trace). The arms differ in the step
size schedule (uqzoo's cosine decay, the plain script's constant 0.01) and
uqzoo also draws its predictive samples, extra work on uqzoo's side.

Run: ``python benchmarks/bench_mfvi.py [--steps 10000] [--pyro-steps 1000]``
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

import numpy as np

import uqzoo as uz


def test_log_likelihood(proba, y):
    return float(np.mean(np.log(np.clip(proba[np.arange(len(y)), y], 1e-12, None))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--pyro-steps", type=int, default=1000)
    args = parser.parse_args()
    data = uz.datasets.load("sim-teacher", p=50, n_train=2000, n_test=2000, seed=0)
    # iid N(0, 1) on every parameter: the plain model's prior.
    spec = uz.MLPSpec(50, 2, hidden=(10, 10), prior="iid")
    X_test, y_test = np.array(data.X_test), np.array(data.y_test)

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", uz.ConvergenceWarning)
        post = uz.fit("mfvi", spec, data, seed=0, num_steps=args.steps, progress_bar=False)
    seconds = time.perf_counter() - t0
    assert len(post.diagnostics["elbo"]) == args.steps, len(post.diagnostics["elbo"])
    proba = post.predict_proba(X_test)
    print(f"uqzoo mfvi: {seconds:.1f} s, converged={post.converged}, "
          f"final ELBO {post.diagnostics['elbo'][-500:].mean():.1f}, "
          f"test log-lik {test_log_likelihood(proba, y_test):.4f}, warnings {len(caught)}",
          flush=True)

    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    def model(X, y):
        h = X
        sizes = (50, 10, 10, 1)
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            w = numpyro.sample(f"w{i}", dist.Normal(0, 1).expand((b, a)).to_event(2))
            c = numpyro.sample(f"b{i}", dist.Normal(0, 1).expand((b,)).to_event(1))
            h = h @ w.T + c
            if i < 2:
                h = jnp.tanh(h)
        numpyro.sample("y", dist.Bernoulli(logits=h[:, 0]), obs=y)

    t0 = time.perf_counter()
    guide = AutoNormal(model, init_scale=0.01)
    svi = SVI(model, guide, Adam(0.01), Trace_ELBO())
    result = svi.run(jax.random.key(0), args.steps, jnp.asarray(data.X_train),
                     jnp.asarray(data.y_train), progress_bar=False)
    jax.block_until_ready(result.params)
    seconds_plain = time.perf_counter() - t0
    assert len(result.losses) == args.steps, len(result.losses)
    print(f"plain NumPyro SVI (AutoNormal, constant lr): {seconds_plain:.1f} s, "
          f"final ELBO {-np.mean(np.asarray(result.losses)[-500:]):.1f}", flush=True)

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        uz.fit("mfvi", spec, data, seed=0, backend="pyro", num_steps=args.pyro_steps,
               num_samples=10, progress_bar=False)
    seconds_pyro = time.perf_counter() - t0
    print(f"pyro backend: {seconds_pyro:.1f} s for {args.pyro_steps} steps = "
          f"{1e3 * seconds_pyro / args.pyro_steps:.2f} ms/step "
          f"(uqzoo NumPyro: {1e3 * seconds / args.steps:.2f} ms/step incl. compile)", flush=True)


if __name__ == "__main__":
    main()

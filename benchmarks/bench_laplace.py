"""Benchmark: uqzoo ``laplace`` (all weights, full GGN, marginal-likelihood prior) vs laplace-torch.

The workload of issue 5: a 50-10-10-1 tanh network trained to the MAP on
n = 2000 rows (by uqzoo's trainer; both libraries start from the same trained
network), then

- the Laplace approximation over all 631 weights with the full GGN,
- the prior precision tuned by maximising the Laplace marginal likelihood
  (one scalar),
- a predictive with 1000 draws for 10,000 test points.

uqzoo: ``laplace.laplace_at`` (GGN, tuning) + 1000 weight draws, then the
streamed ``Posterior.summarize`` over the 10k points for the GLM predictive
(and, separately, the "nn" predictive and the sampling-free ``probit_mean``).

laplace-torch (``Laplace(model, "classification", subset_of_weights="all",
hessian_structure="full")``, ``fit``, ``optimize_prior_precision(method="marglik",
prior_structure="scalar")``, then ``la(X_test, pred_type="glm",
link_approx="mc", n_samples=1000)``) is NOT a dependency of uqzoo: it pulls
torchvision and a newer torch. To run it side by side in this process, install
it into a separate environment that shares this torch (see the README's
benchmark section) and pass ``--laplace-torch-site`` with that environment's
site-packages; its modules are then appended to ``sys.path`` after ours.
laplace-torch's classification likelihood is a softmax, so it gets the same
network with a two-logit last layer [0, z] (identical probabilities).

Without laplace-torch, ``--baseline-laplace OLD/laplace.py`` (and
``--baseline-nets-torch OLD/nets/torch.py`` for the linearised forward the
GLM predictive uses) times an earlier uqzoo's Laplace in the same process,
on the same trained network, in alternating rounds (``--rounds``), so a
change is measured against the code it replaces under the same load.

Peak resident memory is measured per phase (Linux ``clear_refs``/``VmHWM``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

import uqzoo as uz
from uqzoo.methods import _trainer, laplace
from uqzoo.nets import torch as tnet
from uqzoo.posterior import Posterior


def reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(label, fn, results):
    reset_peak_rss()
    t = time.perf_counter()
    out = fn()
    results[label] = (time.perf_counter() - t, peak_rss_mib())
    return out


def load_module(name: str, path: str):
    """Import a Python file under ``name`` (an earlier version of a uqzoo module)."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module      # dataclasses look their module up while it executes
    module_spec.loader.exec_module(module)
    return module


def compare_with_baseline(args, spec, map_params, X_train, y_train, X_test) -> None:
    """Current vs baseline uqzoo Laplace, same process, alternating rounds.

    Phases: GGN + scalar marglik tuning (``laplace_at``), the GLM predictive
    (streamed ``summarize`` over the test points with the 1000 draws of the
    current Gaussian, so both arms summarise the same draws) and the probit
    mean. The baseline's linearised forward is swapped into the predictive
    engine for its arm (the engine reads ``nets.torch.linearized_logits`` at
    call time). Reports every round's wall time, the minimum and median of
    wall and process CPU time (on a shared machine the minimum is the least
    disturbed run), and the ratios.
    """
    old_laplace = load_module("baseline_laplace", args.baseline_laplace)
    old_nets = (load_module("baseline_nets_torch", args.baseline_nets_torch)
                if args.baseline_nets_torch else tnet)
    current_linearized = tnet.linearized_logits
    gaussian = laplace.laplace_at(spec, map_params, X_train, y_train)
    center = spec.flatten({k: v.astype(np.float64) for k, v in map_params.items()})
    draws = spec.unflatten(laplace._sample(gaussian, center, args.draws,
                                           np.random.default_rng(1)).astype(np.float32))
    glm = Posterior(spec=spec, method="laplace", config={}, seed=0, draws=draws,
                    predictive="glm", anchor=map_params,
                    diagnostics={"posterior_precision": gaussian.precision,
                                 "subset_index": gaussian.subset_index})
    arms: dict[str, tuple] = {"current": (laplace, current_linearized),
                              "baseline": (old_laplace, old_nets.linearized_logits)}
    phases: dict[str, Callable] = {
        "GGN + scalar marglik tuning": lambda lap: lap.laplace_at(
            spec, map_params, X_train, y_train, subset="all", hessian="full",
            prior_tuning="scalar"),
        f"glm predictive, {args.draws} draws x {args.n_test} points":
            lambda lap: glm.summarize(X_test, levels=(0.8, 0.95)),
        f"probit mean, {args.n_test} points": lambda lap: lap.probit_mean(glm, X_test),
    }
    seconds: dict[tuple[str, str], list[float]] = {}
    cpu_seconds: dict[tuple[str, str], list[float]] = {}
    outputs: dict[tuple[str, str], object] = {}
    try:
        for r in range(args.rounds):
            # Alternate which arm goes first, so neither always runs warmer.
            order = list(arms) if r % 2 == 0 else list(arms)[::-1]
            for arm in order:
                module, linearized = arms[arm]
                tnet.linearized_logits = linearized
                for phase, fn in phases.items():
                    t, cpu = time.perf_counter(), time.process_time()
                    outputs[arm, phase] = fn(module)
                    seconds.setdefault((arm, phase), []).append(time.perf_counter() - t)
                    cpu_seconds.setdefault((arm, phase), []).append(time.process_time() - cpu)
    finally:
        tnet.linearized_logits = current_linearized
    print(f"\n{'phase':44s} {'arm':9s} {'wall min':>8s} {'median':>7s} {'CPU min':>8s} "
          f"{'median':>7s}  wall per round")
    stats = ("wall min", "wall median", "CPU min", "CPU median")
    totals = {(arm, stat): 0.0 for arm in arms for stat in stats}
    for phase in phases:
        row = {}
        for arm in arms:
            wall, cpu_time = seconds[arm, phase], cpu_seconds[arm, phase]
            row[arm] = dict(zip(stats, (min(wall), float(np.median(wall)), min(cpu_time),
                                        float(np.median(cpu_time))), strict=True))
            for stat in stats:
                totals[arm, stat] += row[arm][stat]
            print(f"{phase:44s} {arm:9s} " + " ".join(
                f"{row[arm][stat]:{8 if stat.endswith('min') else 7}.3f}" for stat in stats)
                + "  " + " ".join(f"{t:.2f}" for t in wall))
        print(f"{'':44s} baseline / current: " + ", ".join(
            f"{stat} {row['baseline'][stat] / row['current'][stat]:.2f}" for stat in stats))
    print(f"{'sum over phases':44s} baseline / current: " + ", ".join(
        f"{stat} {totals['baseline', stat]:.2f} / {totals['current', stat]:.2f} = "
        f"{totals['baseline', stat] / totals['current', stat]:.2f}" for stat in stats))
    ggn = "GGN + scalar marglik tuning"
    new, old = outputs["current", ggn], outputs["baseline", ggn]
    ggn_change = np.abs(new.ggn - old.ggn).max() / np.abs(old.ggn).max()
    print(f"max |GGN current - baseline| / max |GGN| = {ggn_change:.1e}; "
          f"prior precision {new.prior_precision[0]:.6f} vs {old.prior_precision[0]:.6f}; "
          f"log marglik {new.log_marginal_likelihood:.6f} vs {old.log_marginal_likelihood:.6f}")
    glm_phase = next(p for p in phases if p.startswith("glm"))
    probit_phase = next(p for p in phases if p.startswith("probit"))
    glm_change = np.abs(outputs["current", glm_phase].mean
                        - outputs["baseline", glm_phase].mean).max()
    probit_change = np.abs(outputs["current", probit_phase]
                           - outputs["baseline", probit_phase]).max()
    print(f"max |mean p current - baseline|: glm {glm_change:.1e}, probit {probit_change:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--laplace-torch-site", help="site-packages holding laplace-torch")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--n-test", type=int, default=10_000)
    parser.add_argument("--lt-chunk", type=int, default=1000,
                        help="points per laplace-torch predictive call (one call on 10k "
                             "points exhausts memory)")
    parser.add_argument("--baseline-laplace",
                        help="an earlier uqzoo methods/laplace.py to time in this process")
    parser.add_argument("--baseline-nets-torch",
                        help="the nets/torch.py of the same earlier uqzoo (linearised forward)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds of current and baseline")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n, d = 2000, 50
    teacher = rng.normal(size=5)
    X = rng.normal(size=(n + args.n_test, d)).astype(np.float32)
    logit = np.tanh(X[:, :5] @ teacher) * 3 + X[:, 5]
    y = (rng.random(len(X)) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    X_train, y_train, X_test = X[:n], y[:n], X[n:]
    spec = uz.MLPSpec(d, 2, hidden=(10, 10))
    print(f"load average before: {os.getloadavg()}; torch threads {torch.get_num_threads()}")

    t = time.perf_counter()
    trained = _trainer.train(spec, X_train, y_train, spec.init_params(0, num=1),
                             _trainer.TrainingConfig(num_epochs=2000, learning_rate=0.01),
                             keys=_trainer.member_keys([0]))
    map_params = {k: v[0] for k, v in trained.params.items()}
    print(f"MAP training (shared by both): {time.perf_counter() - t:.2f} s")

    results: dict[str, tuple[float, float]] = {}
    gaussian = timed("uqzoo: GGN + scalar marglik tuning",
                     lambda: laplace.laplace_at(spec, map_params, X_train, y_train,
                                                subset="all", hessian="full",
                                                prior_tuning="scalar"), results)
    center = spec.flatten({k: v.astype(np.float64) for k, v in map_params.items()})
    draws = timed(f"uqzoo: {args.draws} weight draws",
                  lambda: spec.unflatten(laplace._sample(
                      gaussian, center, args.draws, np.random.default_rng(1)
                  ).astype(np.float32)), results)
    glm = Posterior(spec=spec, method="laplace", config={}, seed=0, draws=draws,
                    predictive="glm", anchor=map_params)
    nn = Posterior(spec=spec, method="laplace", config={}, seed=0, draws=draws,
                   predictive="nn", anchor=map_params)
    summary = timed(f"uqzoo: glm predictive, {args.draws} draws x {args.n_test} points",
                    lambda: glm.summarize(X_test, levels=(0.8, 0.95)), results)
    timed(f"uqzoo: nn predictive, {args.draws} draws x {args.n_test} points",
          lambda: nn.summarize(X_test, levels=(0.8, 0.95)), results)
    glm_diag = Posterior(spec=spec, method="laplace", config={}, seed=0, draws=draws,
                         predictive="glm", anchor=map_params,
                         diagnostics={"posterior_precision": gaussian.precision,
                                      "subset_index": gaussian.subset_index})
    probit = timed(f"uqzoo: probit mean, {args.n_test} points",
                   lambda: laplace.probit_mean(glm_diag, X_test), results)
    ours_total = sum(results[k][0] for k in list(results)[:3])
    print(f"uqzoo prior precision {gaussian.prior_precision[0]:.4f}, "
          f"log marginal likelihood {gaussian.log_marginal_likelihood:.3f}")

    theirs_total = None
    if args.laplace_torch_site:
        sys.path.append(args.laplace_torch_site)
        from laplace import Laplace

        model = torch.nn.Sequential(torch.nn.Linear(d, 10), torch.nn.Tanh(),
                                    torch.nn.Linear(10, 10), torch.nn.Tanh(),
                                    torch.nn.Linear(10, 2))
        with torch.no_grad():
            for i, layer in enumerate([model[0], model[2]]):
                layer.weight.copy_(torch.from_numpy(map_params[f"layers.{i}.weight"]))
                layer.bias.copy_(torch.from_numpy(map_params[f"layers.{i}.bias"]))
            w_last = map_params["layers.2.weight"]
            model[4].weight.copy_(torch.from_numpy(np.vstack([np.zeros_like(w_last), w_last])))
            model[4].bias.copy_(torch.from_numpy(np.r_[0.0, map_params["layers.2.bias"]]))
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)),
            batch_size=256)
        X_test_t = torch.from_numpy(X_test)

        def lt_fit():
            la = Laplace(model, "classification", subset_of_weights="all",
                         hessian_structure="full")
            la.fit(loader)
            la.optimize_prior_precision(pred_type="glm", method="marglik",
                                        prior_structure="scalar")
            return la

        la = timed("laplace-torch: fit + scalar marglik tuning", lt_fit, results)
        print("laplace-torch fitted", flush=True)

        def lt_predict(**kw):
            return torch.cat([la(X_test_t[i:i + args.lt_chunk], pred_type="glm", **kw)
                              for i in range(0, args.n_test, args.lt_chunk)])

        lt_mc = timed(f"laplace-torch: glm mc predictive, {args.draws} samples x "
                      f"{args.n_test} points ({args.lt_chunk}-point calls)",
                      lambda: lt_predict(link_approx="mc", n_samples=args.draws), results)
        lt_probit = timed(f"laplace-torch: glm probit predictive, {args.n_test} points",
                          lambda: lt_predict(link_approx="probit"), results)
        theirs_total = sum(results[k][0] for k in list(results)[5:7])
        # Equal work (STYLE.md rule 20): the same trained network (one more, all-zero
        # logit row: 11 parameters), the full GGN over all weights, one scalar prior
        # precision by the marginal likelihood, and a GLM predictive of as many
        # draws over the same test points. uqzoo's summarize does more, not less:
        # it also computes the 80 % and 95 % intervals of every point.
        n_params = sum(p.numel() for p in model.parameters())
        assert n_params == spec.n_params + 11, (n_params, spec.n_params)
        assert la.H.shape == (n_params, n_params), la.H.shape
        # one scalar each (uqzoo reports it per layer: equal entries when tuned as a scalar)
        assert la.prior_precision.numel() == 1
        assert np.unique(gaussian.prior_precision).size == 1, gaussian.prior_precision
        assert draws[next(iter(draws))].shape[0] == args.draws
        assert lt_mc.shape == (args.n_test, 2) and summary.mean.shape == (args.n_test, 2)
        assert summary.lower.shape[0] == 2        # the two levels' intervals, on top
        delta = float(la.prior_precision.reshape(-1)[0])
        print(f"laplace-torch prior precision {delta:.4f}, log marginal likelihood "
              f"{float(la.log_marginal_likelihood()):.3f} (two-logit net: 11 more parameters)")
        print(f"|mean p - laplace-torch mc mean p| max over points: "
              f"{np.abs(summary.mean[:, 1] - lt_mc[:, 1].numpy()).max():.4f}; probit vs probit: "
              f"{np.abs(probit[:, 1] - lt_probit[:, 1].numpy()).max():.4f}")

    print(f"\n{'phase':70s} {'seconds':>8s} {'peak RSS MiB':>13s}")
    for label, (sec, rss) in results.items():
        print(f"{label:70s} {sec:8.2f} {rss:13.0f}")
    print(f"\nuqzoo total (GGN + tuning + {args.draws} draws + glm predictive on "
          f"{args.n_test} points): {ours_total:.2f} s")
    if theirs_total is not None:
        print(f"laplace-torch total (fit + tuning + glm mc predictive): {theirs_total:.2f} s")
    if args.baseline_laplace:
        compare_with_baseline(args, spec, map_params, X_train, y_train, X_test)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

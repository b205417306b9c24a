"""Benchmark: the vectorised MAP trainer against a plain PyTorch loop and torch ``vmap``.

The workload of issue 5: a 10-member ensemble of a 50-10-10-1 tanh network,
n = 2000 rows, 2000 full-batch Adam steps (lr 1e-2, weight decay = the N(0, 1)
prior, i.e. 1/N on the mean loss). Measured in one process, side by side,
from the same initial parameters.

Every arm does the same work (STYLE.md rule 20), and the script asserts it:
the same data, the same 2000 steps for every member (uqzoo's trainer runs
without its plateau stopping rule, ``convergence_window=None``, and each
member's ``stopped_epoch`` is checked), the same prior -- iid N(0, 1) on every
weight and bias (``MLPSpec(prior="iid")``), which is what torch's
``weight_decay = 1/N`` on the mean loss is. Before issue 22 uqzoo's arm ran
under the spec's default fan-in prior and stopped at its plateau (537-1083
of the 2000 epochs), so its figures counted less work than the torch loops'.
Arms:

1. the machine's float32 matrix-multiply peak (a large square sgemm through
   torch, best of several), the yardstick for the GFLOP/s figures;
2. a plain PyTorch loop -- one ``nn.Module`` and ``torch.optim.Adam`` per
   member, trained one after another: what most users write;
3. torch's own vectorisation: ``torch.func.stack_module_state`` +
   ``vmap(grad(functional_call))`` with one Adam over the stacked tensors;
4. uqzoo's trainer (``uqzoo.methods._trainer.train``: JAX, the forward,
   likelihood and prior of ``uqzoo.nets.jax`` over all members at once,
   gradients by ``jax.value_and_grad``, optax's Adam, ``lax.scan`` over the
   steps), timed cold (compilation included: what a user pays) and warm;
5. optionally (``--compare-trainer PATH``) another version of the trainer
   module loaded from a file -- e.g. the previous release's, with its
   hand-written backward pass and Adam -- timed the same way in the same
   process, so that a change of the trainer is judged side by side.

GFLOP/s count the forward and backward matrix products (2·N·in·out per layer
forward, the same again for the weight gradients, and again for the input
gradients of every layer but the first); elementwise work is not counted.

Run ``python benchmarks/bench_ensemble.py`` (about a minute on an idle
2-core machine) or ``--quick``. The machine may be shared: the load average is
printed before and after so that a slow figure can be judged.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import resource
import sys
import time
from types import ModuleType

import numpy as np
import torch

import uqzoo as uz
from uqzoo.methods import _trainer
from uqzoo.nets import torch as tnet


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sgemm_peak(size: int = 2048, repeats: int = 7) -> float:
    """Best float32 GFLOP/s of a square matrix product through torch."""
    a = torch.randn(size, size, generator=torch.Generator().manual_seed(0))
    b = torch.randn(size, size, generator=torch.Generator().manual_seed(1))
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t)
    return 2 * size ** 3 / best / 1e9


def load_trainer(path: str) -> ModuleType:
    """A trainer module (the interface of ``uqzoo.methods._trainer``) loaded from a file."""
    name = "bench_alternative_trainer"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--compare-trainer: cannot load a module from {path!r}")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: dataclasses look their module up in sys.modules.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def flops_per_member_step(spec: uz.MLPSpec, n: int) -> float:
    sizes = spec.layer_sizes
    products = [a * b for a, b in itertools.pairwise(sizes)]
    return 2 * n * (2 * sum(products) + sum(products[1:]))


def torch_loop(spec, X, y, init, steps, lr, decay):
    members = []
    for m in range(next(iter(init.values())).shape[0]):
        net = tnet.MLP(spec)
        net.load_state_dict({k: torch.tensor(v[m]) for k, v in init.items()})
        opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=decay)
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(X)[:, 0], y)
            loss.backward()
            opt.step()
        members.append({k: v.detach().numpy().copy() for k, v in net.state_dict().items()})
    return {k: np.stack([mem[k] for mem in members]) for k in init}


def torch_vmap(spec, X, y, init, steps, lr, decay):
    from torch.func import functional_call, grad, vmap

    base = tnet.MLP(spec)
    params = {k: torch.tensor(v).clone().requires_grad_(True) for k, v in init.items()}

    def loss_fn(p):
        logits = functional_call(base, p, (X,))
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], y)

    grads_fn = vmap(grad(loss_fn))
    # Adam is elementwise, so one torch Adam over the stacked tensors is M Adams.
    opt = torch.optim.Adam(list(params.values()), lr=lr, weight_decay=decay)
    for _ in range(steps):
        grads = grads_fn({k: v.detach() for k, v in params.items()})
        for k, v in params.items():
            v.grad = grads[k]
        opt.step()
    return {k: v.detach().numpy() for k, v in params.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 steps, 4 members")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--torch-threads", type=int,
                        help="torch intra-op threads (default: torch's own choice); on a "
                             "loaded machine 1 thread can be much faster for the baselines")
    parser.add_argument("--warm-repeats", type=int, default=1, metavar="K",
                        help="time the warm trainers K times, alternating, and keep each "
                             "one's fastest run: on a shared machine the alternation "
                             "exposes both to the same load")
    parser.add_argument("--compare-trainer", metavar="PATH",
                        help="also time the trainer module in this file (same interface as "
                             "uqzoo.methods._trainer), e.g. a copy of the previous version")
    args = parser.parse_args()
    steps, members = (200, 4) if args.quick else (2000, 10)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    n, lr = 2000, 1e-2

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 50)).astype(np.float32)
    logit = np.tanh(X[:, :5] @ rng.normal(size=5)) * 3 + X[:, 5]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    # iid N(0, prior_scale²) on every parameter: the prior torch's weight decay is.
    spec = uz.MLPSpec(50, 2, hidden=(10, 10), prior="iid")
    decay = 1.0 / (spec.prior_scale ** 2 * n)
    init = {k: np.stack([spec.init_params(seed=100 + m)[k] for m in range(members)])
            for k in spec.param_shapes()}
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y.astype(np.float32))

    load_before = os.getloadavg()
    print(f"load average before: {load_before}; torch threads {torch.get_num_threads()}")
    peak = sgemm_peak()
    print(f"float32 sgemm peak (2048^3, torch): {peak:.1f} GFLOP/s")
    work = flops_per_member_step(spec, n) * steps * members / 1e9
    print(f"work: {members} members x {steps} steps x "
          f"{flops_per_member_step(spec, n) / 1e6:.2f} MFLOP = {work:.1f} GFLOP")

    print(f"every arm: {members} members x {steps} full-batch Adam steps (no stopping rule), "
          f"prior iid N(0, {spec.prior_scale}^2) = weight decay {decay:.2e}, n = {n}, "
          f"the same initial parameters")

    def trainer_run(module: ModuleType):
        # No plateau stopping: every member runs all the steps, as the torch loops do.
        config = module.TrainingConfig(optimizer="adam", learning_rate=lr, num_epochs=steps,
                                       convergence_window=None)
        keys = module.member_keys(list(range(members)))

        def run():
            result = module.train(spec, X, y, init, config, keys=keys)
            # Equal work: every member ran every step.
            assert result.num_steps == steps, (result.num_steps, steps)
            assert np.all(np.asarray(result.stopped_epoch) == steps), result.stopped_epoch
            return result.params
        return run

    trainers = [_trainer]
    ours = trainer_run(_trainer)
    cold = [("uqzoo (cold, incl. compile)", ours)]
    warm = [("uqzoo (warm)", ours)]
    if args.compare_trainer:
        trainers.append(load_trainer(args.compare_trainer))
        other = trainer_run(trainers[-1])
        cold.append(("compared (cold, incl. compile)", other))
        warm.append(("compared (warm)", other))
    baselines = [("torch loop", lambda: torch_loop(spec, Xt, yt, init, steps, lr, decay)),
                 ("torch vmap", lambda: torch_vmap(spec, Xt, yt, init, steps, lr, decay))]

    # JAX's one-time start-up (backend, eager helpers' kernels) goes to whichever
    # trainer runs first -- about a second here. A 2-epoch fit of a tiny problem
    # with each trainer pays it up front, so the cold figures below are this
    # problem's compilation and run only, comparable between the two trainers.
    t = time.perf_counter()
    tiny = uz.MLPSpec(3, 2, hidden=(2,))
    for module in trainers:
        module.train(tiny, X[:8, :3], y[:8], tiny.init_params(0, num=2),
                     module.TrainingConfig(num_epochs=2), keys=module.member_keys([0, 1]))
    print(f"JAX start-up (2-epoch fits of a tiny problem): {time.perf_counter() - t:.2f} s")

    results: dict[str, float] = {}
    cpu: dict[str, float] = {}
    params = {}
    for name, fn in cold + baselines + warm * max(1, args.warm_repeats):
        t, c = time.perf_counter(), cpu_seconds()
        params[name] = fn()
        wall, used = time.perf_counter() - t, cpu_seconds() - c
        print(f"  {name}: {wall:.2f} s wall, {used:.2f} s CPU", flush=True)
        if wall < results.get(name, np.inf):
            results[name], cpu[name] = wall, used

    loop, loop_cpu = results["torch loop"], cpu["torch loop"]
    print(f"\n{'trainer':30s} {'wall s':>7s} {'vs loop':>8s} {'CPU s':>7s} {'vs loop':>8s} "
          f"{'GFLOP/s':>8s} {'% peak':>7s}")
    for name, sec in results.items():
        print(f"{name:30s} {sec:7.2f} {loop / sec:7.2f}x {cpu[name]:7.2f} "
              f"{loop_cpu / cpu[name]:7.2f}x {work / sec:8.1f} {100 * work / sec / peak:6.1f}%")
    ref = params["torch loop"]
    for name in [w for w, _ in warm] + ["torch vmap"]:
        diff = max(float(np.abs(params[name][k] - ref[k]).max()) for k in ref)
        print(f"max |param - torch loop| for {name}: {diff:.2e}")
    load_after = os.getloadavg()
    print(f"load average after: {load_after}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"compared_trainer": args.compare_trainer, "seconds": results,
                       "cpu_seconds": cpu, "sgemm_gflops": peak, "work_gflop": work,
                       "load_before": load_before, "load_after": load_after}, f, indent=1)


if __name__ == "__main__":
    main()

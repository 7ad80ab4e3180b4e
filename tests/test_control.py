"""rnnlab.control: environments, shifts, experts (analytic and exported PPO), rollouts, imitation."""
import json
import sys

import numpy as np
import pytest
import torch

gym = pytest.importorskip("gymnasium")

from rnnlab.control import envs, experts, imitation, rollouts  # noqa: E402
from rnnlab.control.envs import make_env  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


# --- environments and shifts --------------------------------------------------------------------------------

def test_pendulum_hides_the_velocity():
    env = make_env("pendulum")
    obs, info = env.reset(seed=3)
    assert obs.shape == (2,) and env.observation_space.shape == (2,)
    assert np.allclose(info["full_obs"][:2], obs) and info["full_obs"].shape == (3,)
    obs, _, _, _, info = env.step(np.array([0.5], np.float32))
    assert np.allclose(info["full_obs"][:2], obs)
    full = make_env("pendulum", observe="full")
    assert full.reset(seed=3)[0].shape == (3,)


def _shifted(kind, p, std, steps=400, seed=0):
    base = make_env("pendulum", observe="full")
    shifted = make_env("pendulum", observe="full", shift=kind, p=p, obs_std=std)
    base.reset(seed=seed)
    shifted.reset(seed=seed)
    diffs, flags = [], []
    for t in range(steps):
        a = np.array([np.sin(t / 7.0)], np.float32)
        o1 = base.step(a)[0]
        o2, _, term, trunc, info = shifted.step(a)
        diffs.append(o2 - o1)
        flags.append(info["shifted"])
        if term or trunc:
            base.reset(seed=seed + t + 1)
            shifted.reset(seed=seed + t + 1)
    return np.array(diffs), np.array(flags)


def test_shifts_perturb_with_probability_p_in_units_of_sigma():
    std = np.array([0.1, 0.2, 3.0])
    d, flags = _shifted("noise", 0.1, std, steps=2000)
    assert 0.07 < flags.mean() < 0.13                       # p = 0.1
    assert np.all(d[~flags] == 0)                            # untouched steps are untouched
    z = d[flags] / std
    assert np.all(np.abs(z.std(0) - envs.NOISE_STD) < 0.2)   # N(0, (1 sigma)^2) per dimension
    d, flags = _shifted("offset", 1.0, std, steps=200)
    ratio = d / std
    assert np.allclose(np.abs(ratio), envs.OFFSET, atol=1e-5)
    assert np.all(np.sign(ratio) == np.sign(ratio[:, :1]))   # one sign for the whole vector
    assert {1.0, -1.0} <= set(np.sign(ratio[:, 0]))
    base = make_env("pendulum", observe="full")
    drop = make_env("pendulum", observe="full", shift="dropout", p=1.0, obs_std=std)
    o1, o2 = base.reset(seed=1)[0], drop.reset(seed=1)[0]
    zeros = []
    for _ in range(200):
        o1, o2 = base.step(np.zeros(1, np.float32))[0], drop.step(np.zeros(1, np.float32))[0]
        assert np.all((o2 == o1) | (o2 == 0))
        zeros.append(o2 == 0)
    assert 0.35 < np.mean(zeros) < 0.65                       # each dimension with probability 0.5


def test_shifts_are_reproducible_from_the_reset_seed():
    std = np.ones(3)
    a, fa = _shifted("noise", 0.3, std, steps=100, seed=5)
    b, fb = _shifted("noise", 0.3, std, steps=100, seed=5)
    assert np.array_equal(a, b) and np.array_equal(fa, fb)


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="cartpole"), "env must be one of"),
    (dict(name="pendulum", shift="blur"), "shift must be one of"),
    (dict(name="pendulum", shift="noise"), "needs obs_std"),
    (dict(name="pendulum", shift="noise", obs_std=np.ones(2)), "obs_std must be 3"),
    (dict(name="pendulum", shift="noise", obs_std=np.ones(3), p=1.5), "p must be a probability"),
    (dict(name="pendulum", observe="partial"), "observe must be"),
])
def test_bad_environment_arguments_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_env(**kwargs)


def test_halfcheetah_steps_under_every_shift():
    pytest.importorskip("mujoco")
    std = np.ones(17)
    for kind in envs.SHIFTS:
        env = make_env("halfcheetah", shift=kind, p=0.5, obs_std=std, max_episode_steps=20)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (17,)
        n = 0
        while True:
            obs, r, term, trunc, _ = env.step(env.action_space.sample())
            n += 1
            if term or trunc:
                break
        assert n == 20 and np.all(np.isfinite(obs))


def test_missing_packages_say_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(ImportError, match=r'pip install "rnnlab\[control\]"'):
        make_env("halfcheetah")
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)
    from rnnlab.control import ppo_expert
    with pytest.raises(ImportError, match="training the PPO expert needs"):
        ppo_expert.train_expert("unused", steps=10)


def test_fault_wrapper_raises_mid_episode():
    env = make_env("pendulum", fault_at_step=3)
    env.reset(seed=0)
    env.step(np.zeros(1, np.float32))
    env.step(np.zeros(1, np.float32))
    with pytest.raises(RuntimeError, match="injected environment fault at step 3"):
        env.step(np.zeros(1, np.float32))


# --- experts -------------------------------------------------------------------------------------------------

def test_lqr_gain_stabilises_the_linearised_pendulum():
    P = experts.PENDULUM
    a, b, dt = 3 * P["g"] / (2 * P["l"]), 3 / (P["m"] * P["l"] ** 2), P["dt"]
    A = np.array([[1 + a * dt * dt, dt], [a * dt, 1.0]])
    B = np.array([[b * dt * dt], [b * dt]])
    assert np.max(np.abs(np.linalg.eigvals(A))) > 1                   # upright is unstable
    assert np.max(np.abs(np.linalg.eigvals(A - B @ experts.pendulum_lqr_gain()))) < 1


def test_pendulum_expert_swings_up_and_balances():
    res = rollouts.evaluate_policy("pendulum", experts.PendulumExpert(), episodes=6, seed=0, observe="full")
    zero = rollouts.evaluate_policy("pendulum", experts.ZeroPolicy(1), episodes=6, seed=0, observe="full")
    assert res["mean_return"] > -250 and zero["mean_return"] < -800
    env = make_env("pendulum", observe="full")
    obs, _ = env.reset(seed=4)
    ex = experts.PendulumExpert()
    for _ in range(200):
        obs = env.step(ex.act(obs))[0]
    assert obs[0] > 0.99 and abs(obs[2]) < 0.1                          # upright at rest at the end
    with pytest.raises(ValueError, match="observe='full'"):
        ex.act(obs[:2])


def test_mlp_policy_round_trip_without_pickle(tmp_path):
    rng = np.random.default_rng(0)
    layers = [(rng.normal(size=(8, 5)), rng.normal(size=8)), (rng.normal(size=(2, 8)), rng.normal(size=2))]
    pol = experts.MLPPolicy(layers, "relu", rng.normal(size=5), rng.random(5) + 0.5, 10.0, 1e-8,
                            -np.ones(2), np.ones(2), meta={"note": "x"})
    path = tmp_path / "p.npz"
    pol.save(path)
    with np.load(path, allow_pickle=False) as z:                        # no object arrays inside
        assert all(z[k].dtype != object for k in z.files)
    back = experts.MLPPolicy.load(path)
    obs = rng.normal(size=5)
    z = np.clip((obs - pol.obs_mean) / np.sqrt(pol.obs_var + 1e-8), -10, 10)
    want = np.clip(layers[1][0] @ np.maximum(layers[0][0] @ z + layers[0][1], 0) + layers[1][1], -1, 1)
    assert np.allclose(back.act(obs), want, atol=1e-6) and back.meta["note"] == "x"
    with pytest.raises(FileNotFoundError, match="train-expert"):
        experts.MLPPolicy.load(tmp_path / "missing.npz")


def test_expert_for_each_environment():
    assert isinstance(experts.expert_for("pendulum"), experts.PendulumExpert)
    cheetah = experts.expert_for("halfcheetah")                        # the committed expert
    assert isinstance(cheetah, experts.MLPPolicy) and cheetah.act(np.zeros(17)).shape == (6,)
    with pytest.raises(ValueError, match="expert path"):
        experts.expert_for("pendulum", "some.npz")
    with pytest.raises(ValueError, match="env must be one of"):
        experts.expert_for("cartpole")


def test_ppo_expert_trains_resumes_and_exports(tmp_path):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("mujoco")
    from rnnlab.control import ppo_expert
    out = tmp_path / "expert"
    assert ppo_expert.train_expert(str(out), steps=1024, checkpoint_every=512, progress=False,
                                   max_minutes=0.0) is None             # stops at once, saves, resumable
    prog = json.loads((out / "progress.json").read_text())
    first = prog["step"]
    assert first < 1024 and (out / "checkpoint.zip").exists()
    ev = ppo_expert.train_expert(str(out), steps=1024, checkpoint_every=512, progress=False, eval_episodes=2)
    assert json.loads((out / "progress.json").read_text())["step"] >= 1024      # whole rollouts of 512
    assert ev["episodes"] == 2 and len(ev["returns"]) == 2 and ev["seeds"] == [10_000, 10_001]
    assert json.loads((out / "expert-eval.json").read_text())["mean_return"] == ev["mean_return"]
    pol = experts.MLPPolicy.load(out / "expert.npz")                     # export checked against SB3 inside
    assert pol.layers[0][0].shape == (256, 17) and pol.layers[-1][0].shape == (6, 256)
    with pytest.raises(ValueError, match="analytic"):
        ppo_expert.train_expert(str(tmp_path / "p"), env_name="pendulum")
    pub = ppo_expert.publish_expert(str(out), str(tmp_path / "book" / "expert"))
    assert (tmp_path / "book" / "expert.npz").exists() and "training_curve" in pub
    published = json.loads((tmp_path / "book" / "expert.json").read_text())
    assert published["mean_return"] == ev["mean_return"] and published["config"]["steps"] == 1024


# --- rollouts and evaluation ----------------------------------------------------------------------------------

def test_record_and_load_rollouts(tmp_path):
    path = tmp_path / "ro.npz"
    ro = rollouts.record_rollouts("pendulum", experts.PendulumExpert(), str(path), episodes=3, seed=7)
    assert ro["obs"].shape == (3, 200, 3) and ro["actions"].shape == (3, 200, 1)
    assert ro["policy_obs"].shape == (3, 200, 2) and list(ro["seeds"]) == [7, 8, 9]
    assert np.allclose(ro["obs_std"], ro["obs"].reshape(-1, 3).std(0), rtol=1e-5)
    again = rollouts.evaluate_policy("pendulum", experts.PendulumExpert(), episodes=3, seed=7, observe="full")
    assert np.allclose(again["returns"], ro["returns"])                 # seeds make episodes reproducible
    with pytest.raises(ValueError, match="episodes must be"):
        rollouts.record_rollouts("pendulum", experts.PendulumExpert(), str(path), episodes=1)


def test_normalised_return():
    assert rollouts.normalised_return("halfcheetah", 900.0, 1000.0) == 0.9
    assert rollouts.normalised_return("pendulum", -200.0, -150.0, -1150.0) == pytest.approx(0.95)
    with pytest.raises(ValueError, match="zero_return"):
        rollouts.normalised_return("pendulum", -200.0, -150.0)


# --- the imitation network -------------------------------------------------------------------------------------

@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru", "cfc"])
def test_closed_loop_policy_equals_the_trained_forward(cell):
    net = imitation.ImitationNet(3, 2, cell, rank=5, sparsity=0.2, obs_mean=np.ones(3), obs_std=2 * np.ones(3),
                                 head=16, hidden=8, seed=1)
    obs = torch.randn(1, 12, 3)
    with torch.no_grad():
        want, _ = net(obs)
    pol = imitation.RecurrentPolicy(net, action_scale=2.0, record=True)
    got = np.stack([pol.act(o.numpy()) for o in obs[0]])
    assert np.allclose(got, 2.0 * want[0].numpy(), atol=1e-5)
    tr = pol.trajectories()
    G = net.cell.gates
    assert tr["rec"].shape == (12, G * 8) and tr["inp"].shape == (12, G * 8) and tr["h"].shape == (12, 8)
    W = net.cell.recurrent_weights().detach()
    h_prev = torch.as_tensor(tr["h"][4])
    assert np.allclose(tr["rec"][5].reshape(G, 8), torch.einsum("gij,j->gi", W, h_prev).numpy(), atol=1e-5)
    assert ("w" in tr) == (cell == "cfc")
    pol.reset()
    assert np.allclose(pol.act(obs[0, 0].numpy()), got[0], atol=1e-6)   # reset: the zero state again


def test_imitation_net_errors():
    with pytest.raises(ValueError, match="cell must be one of"):
        imitation.ImitationNet(3, 1, "transformer")
    with pytest.raises(ValueError, match="obs_dim must be"):
        imitation.ImitationNet(0, 1)
    with pytest.raises(ValueError, match="window=300"):
        imitation.windows(np.zeros((2, 200, 3)), np.zeros((2, 200, 1)), [200, 200], 300)


def test_windows_cut_inside_lengths():
    obs = np.arange(2 * 10).reshape(2, 10, 1).astype(np.float32)
    x, y = imitation.windows(obs, obs, [10, 7], 3)
    assert x.shape == (5, 3, 1)                                          # 3 + 2 windows
    assert x[3, 0, 0] == 10 and x[4, -1, 0] == 15


def test_effective_dimensionality_and_numerical_rank():
    rng = np.random.default_rng(0)
    low = rng.normal(size=(500, 3)) @ rng.normal(size=(3, 40))
    assert imitation.effective_dimensionality(low) == pytest.approx(1.0)
    iso = rng.normal(size=(4000, 50))
    assert imitation.effective_dimensionality(iso) == pytest.approx(5 / 50, abs=0.02)
    assert imitation.numerical_rank(rng.normal(size=(20, 2)) @ rng.normal(size=(2, 20))) == 2
    with pytest.raises(ValueError, match="steps >= 2"):
        imitation.effective_dimensionality(np.zeros((1, 4)))


# --- one grid point end to end -----------------------------------------------------------------------------------

def test_imitation_run_trains_chooses_evaluates_and_resumes(tmp_path):
    from rnnlab.experiments import imitation as task
    ro = tmp_path / "ro.npz"
    rollouts.record_rollouts("pendulum", experts.PendulumExpert(), str(ro), episodes=5)
    kw = dict(env="pendulum", cell="cfc", rank=5, sparsity=0.5, epochs=2, lrs=(1e-3, 1e-2), batch_size=8,
              val_episodes=1, eval_episodes=2, shifts=("noise", "offset"), rollouts=str(ro), progress=False)
    test = task.run(out=str(tmp_path / "run"), **kw)
    losses = {lr: test[f"val_loss_lr_{lr:g}"] for lr in (1e-3, 1e-2)}
    assert test["lr"] == min(losses, key=losses.get) and test["val_loss"] == losses[test["lr"]]
    for cond in ("none", "noise", "offset"):
        assert np.isfinite(test[f"{cond}_normalised"]) and test[f"{cond}_expert_return"] < 0
    assert test["shift_normalised"] == pytest.approx((test["noise_normalised"] + test["offset_normalised"]) / 2)
    assert 0 < test["ed_h_none"] <= 1 and 0 <= test["cfc_w_dev_noise"] <= 0.5
    assert (tmp_path / "run" / "model.pt").exists() and (tmp_path / "run" / "analysis.npz").exists()
    cached = json.loads((tmp_path / "ro.npz.conditions.json").read_text())
    assert len(cached) == 3 and all("zero" in v for v in cached.values())
    again = task.run(out=str(tmp_path / "run"), **kw)                   # resumed: nothing retrained
    assert again["val_loss"] == test["val_loss"] and again["none_return"] == test["none_return"]
    with pytest.raises(RuntimeError, match="injected environment fault"):
        task.run(out=str(tmp_path / "run"), fault_at_step=7, **kw)
    with pytest.raises(ValueError, match="shifts must be among"):
        task.run(out=str(tmp_path / "x"), **dict(kw, shifts=("blur",)))
    with pytest.raises(ValueError, match="lrs must be positive"):
        task.run(out=str(tmp_path / "x"), **dict(kw, lrs=(0.0,)))
    with pytest.raises(ValueError, match="val_episodes must be"):
        task.run(out=str(tmp_path / "x"), **dict(kw, val_episodes=5))


def test_collect_and_grid_array(tmp_path):
    from rnnlab.control import analysis
    sweep = tmp_path / "sweep"
    (sweep / "trials" / "a").mkdir(parents=True)
    np.savez(sweep / "trials" / "a" / "analysis.npz", rec_singular_values=np.array([1.0, 0.5]))
    rows = [{"trial": "a", "status": "ok", "cell": "cfc", "rank": "full", "sparsity": "0.5", "last_epoch": 3,
             "test_none_normalised": 0.8, "test_shift_normalised": 0.6},
            {"trial": "b", "status": "ok", "cell": "cfc", "rank": "full", "sparsity": "0.5", "seed": "1",
             "test_none_normalised": 0.6},
            {"trial": "c", "status": "error", "cell": "cfc", "rank": "1"}]
    for lr, losses in (("0.0001", [0.5, 0.25]), ("0.0005", [0.4, 0.125])):   # a choice of two learning rates
        (sweep / "trials" / "a" / f"lr-{lr}").mkdir()
        (sweep / "trials" / "a" / f"lr-{lr}" / "metrics.json").write_text(json.dumps(
            {"epochs": [{"epoch": i + 1, "eval_loss": v} for i, v in enumerate(losses)]}))
    (sweep / "trials" / "a" / "metrics.json").write_text(json.dumps(
        {"test": {"none_returns": [1.0, 2.0], "val_loss_lr_0.0001": 0.25, "val_loss_lr_0.0005": 0.125}}))
    (sweep / "results.json").write_text(json.dumps({"command": "python -m rnnlab sweep x", "set": {"seed": "0"},
                                                    "rows": rows}))
    data = analysis.collect([str(sweep)], str(tmp_path / "grid.json"), note="two seeds")
    assert len(data["rows"]) == 2 and data["rows"][0]["rank"] is None and data["rows"][1]["seed"] == 1
    assert data["rows"][0]["rec_singular_values"] == [1.0, 0.5] and data["note"] == "two seeds"
    assert data["rows"][0]["none_returns"] == [1.0, 2.0] and "val_curves" not in data["rows"][1]
    assert data["rows"][0]["val_loss_by_lr"] == {"0.0001": 0.25, "0.0005": 0.125}
    assert data["rows"][0]["val_curves"] == {"0.0001": [0.5, 0.25], "0.0005": [0.4, 0.125]}
    conditions = {f"{c}|2|1000|0.1": {"expert": {"seeds": [1000, 1001], "returns": [5.04, 6.0]}}
                  for c in ("none", "noise")}
    (tmp_path / "conditions.json").write_text(json.dumps(conditions))
    assert analysis.main([str(sweep), "--out", str(tmp_path / "g2.json"), "--conditions",
                          str(tmp_path / "conditions.json")]) == 0
    expert = json.loads((tmp_path / "g2.json").read_text())["expert"]
    assert expert == {c: {"seeds": [1000, 1001], "returns": [5.0, 6.0]} for c in ("none", "noise")}
    conditions["none|10|1000|0.1"] = conditions["none|2|1000|0.1"]
    with pytest.raises(ValueError, match="more than one evaluation of 'none'"):
        analysis.expert_returns(conditions)
    mean, se, n = analysis.grid_array(data["rows"], "cfc", "none_normalised")
    assert mean.shape == (5, 4) and n[4, 2] == 2 and mean[4, 2] == pytest.approx(0.7)
    assert se[4, 2] == pytest.approx(0.1) and np.isnan(mean[0, 0]) and n.sum() == 2
    from rnnlab.control import paper
    means, ses = paper.table(5, "lstm")
    assert means[2, 1] == 0.991 and ses.shape == (5, 4)
    with pytest.raises(ValueError, match="which must be 5 or 6"):
        paper.table(7, "lstm")


def test_the_control_layer_never_imports_an_experiment():
    """rnnlab.control sits below rnnlab.experiments: what both need (the rollouts' default file and
    their recording on first use) lives in rnnlab.control.recorded."""
    import pathlib
    import re

    import rnnlab.control
    from rnnlab.control.recorded import default_rollouts
    from rnnlab.experiments import imitation

    for path in pathlib.Path(rnnlab.control.__file__).parent.glob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+(\.\.experiments|rnnlab\.experiments)", path.read_text(), re.M), path
    assert imitation.default_rollouts is default_rollouts
    assert default_rollouts("pendulum").endswith("rollouts-pendulum.npz")

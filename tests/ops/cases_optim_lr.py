"""sgd, adam and adamw with the learning rate as the scalar input Lr (what a schedule
feeds every step) against a real torch.optim step with that learning rate."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(77)


def rand(*shape, dt=np.float64, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dt)


def torch_step(name, attrs, i):
    """One torch.optim step with lr = the case's Lr, from its P, G and state."""
    import torch
    p = torch.nn.Parameter(torch.tensor(i["P"].astype(np.float64)))
    p.grad = torch.tensor(i["G"].astype(np.float64))
    lr = float(i["Lr"])
    if name == "sgd":
        opt = torch.optim.SGD([p], lr=lr, momentum=attrs.get("momentum", 0.0),
                              weight_decay=attrs.get("weight_decay", 0.0), nesterov=bool(attrs.get("nesterov", 0)))
        if "M" in i:
            opt.state[p]["momentum_buffer"] = torch.tensor(i["M"].astype(np.float64))
        opt.step()
        out = {"P_new": p.detach().numpy()}
        if attrs.get("momentum", 0.0):
            out["M_new"] = opt.state[p]["momentum_buffer"].numpy()
        return out
    cls = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    wd = attrs.get("weight_decay", 1e-2 if name == "adamw" else 0.0)
    opt = cls([p], lr=lr, betas=(attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)),
              eps=attrs.get("eps", 1e-8), weight_decay=wd, foreach=False)
    t = int(i["Step"]) if "Step" in i else attrs.get("t", 1)
    st = opt.state[p]
    st["step"] = torch.tensor(float(t - 1))
    st["exp_avg"] = torch.tensor(i["M"].astype(np.float64))
    st["exp_avg_sq"] = torch.tensor(i["V"].astype(np.float64))
    opt.step()
    return {"P_new": p.detach().numpy(), "M_new": st["exp_avg"].numpy(), "V_new": st["exp_avg_sq"].numpy()}


def cases():
    out = []
    # The attribute lr is set to a different value in some cases: Lr must win.
    sgd = [({}, False, 0.3), ({"momentum": 0.9, "weight_decay": 0.01, "lr": 5.0}, True, 0.05),
           ({"momentum": 0.8, "nesterov": 1}, True, 0.2)]
    for attrs, has_m, lr in sgd:
        for dt in (np.float32, np.float64):
            i = {"P": rand(4, 7, dt=dt), "G": rand(4, 7, dt=dt)}
            if has_m:
                i["M"] = rand(4, 7, dt=dt)
            i["Lr"] = np.array(lr, dtype=dt)
            out.append(Case("sgd", i, lambda i, a: torch_step("sgd", a, i), attrs=attrs))
    # Step and Lr as inputs (what a training step passes), and Lr with the attribute t.
    adam = [({"weight_decay": 0.1}, 6, 0.02, np.float64), ({"lr": 7.0, "t": 3}, None, 0.005, None),
            ({"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}, 1, 0.1, None)]
    for name in ("adam", "adamw"):
        for attrs, step, lr, lr_dt in adam:
            for dt in (np.float32, np.float64):
                i = {"P": rand(3, 5, dt=dt), "G": rand(3, 5, dt=dt), "M": rand(3, 5, dt=dt) * 0.1,
                     "V": rand(3, 5, dt=dt, lo=0, hi=0.01)}
                if step is not None:
                    i["Step"] = np.array(step, dtype=np.int64)
                # An f64 Lr with f32 parameters is converted to f32 by the op.
                i["Lr"] = np.array(lr, dtype=lr_dt or dt)
                out.append(Case(name, i, lambda i, a, n=name: torch_step(n, a, i), attrs=attrs,
                                scale=10 if dt == np.float32 else 1, label="-lr"))
    return out

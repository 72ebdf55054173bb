"""Cases of convolution and pooling: conv 1-D/2-D/3-D (groups, strides, asymmetric pads,
dilations, auto_pad, bias), conv_transpose (output_padding), max/average pooling
(ceil_mode, count_include_pad, dilations), global pooling; forward against NumPy
written here from the definitions, backward ops against PyTorch autograd in f64."""
import numpy as np

from harness import Case

RNG = np.random.default_rng(5)


def rand(*shape, dt=np.float32):
    return RNG.uniform(-1, 1, size=shape).astype(dt)


# --- shared window arithmetic (the same slicing works on NumPy arrays and torch tensors) --

def out_extent(n, k, s, d, pb, pe, ceil=False):
    span = (k - 1) * d + 1
    room = n + pb + pe - span
    out = (-(-room // s) if ceil else room // s) + 1
    if ceil and (out - 1) * s >= n + pb:
        out -= 1
    return out


def window_slices(k_idx, strides, dil, out):
    """The slice of a padded input that offset k_idx of every window reads."""
    return (slice(None), slice(None)) + tuple(
        slice(k * d, k * d + (o - 1) * s + 1, s) for k, s, d, o in zip(k_idx, strides, dil, out))


def geometry(x_shape, kernel, a):
    r = len(kernel)
    s = a.get("strides") or [1] * r
    d = a.get("dilations") or [1] * r
    pads = a.get("pads") or [0] * (2 * r)
    auto = a.get("auto_pad", "NOTSET")
    pb, pe = list(pads[:r]), list(pads[r:])
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for i in range(r):
            n = x_shape[2 + i]
            o = -(-n // s[i])
            total = max(0, (o - 1) * s[i] + (kernel[i] - 1) * d[i] + 1 - n)
            pb[i] = total // 2 if auto == "SAME_UPPER" else total - total // 2
            pe[i] = total - pb[i]
    ceil = bool(a.get("ceil_mode", 0))
    out = [out_extent(x_shape[2 + i], kernel[i], s[i], d[i], pb[i], pe[i], ceil) for i in range(r)]
    return s, d, pb, pe, out


def np_pad(x, pb, pe, extra, value):
    width = [(0, 0), (0, 0)] + [(b, e + x_) for b, e, x_ in zip(pb, pe, extra)]
    return np.pad(x, width, constant_values=value)


def torch_pad(x, pb, pe, extra, value):
    import torch.nn.functional as F
    p = []
    for b, e, x_ in reversed(list(zip(pb, pe, extra))):
        p += [b, e + x_]
    return F.pad(x, p, value=value)


def overhang(x_shape, kernel, s, d, pb, pe, out):
    return [max(0, (o - 1) * si + (k - 1) * di + 1 - (n + b + e))
            for n, k, si, di, b, e, o in zip(x_shape[2:], kernel, s, d, pb, pe, out)]


# --- convolution ------------------------------------------------------------------------

def np_conv(x, w, b, a):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    kernel = list(w.shape[2:])
    s, d, pb, pe, out = geometry(x.shape, kernel, a)
    g = a.get("group", 1)
    xp = np_pad(x, pb, pe, [0] * len(kernel), 0.0)
    n, c, m = x.shape[0], x.shape[1], w.shape[0]
    cg, mg = c // g, m // g
    y = np.zeros((n, m, *out))
    for k_idx in np.ndindex(*kernel):
        patch = xp[window_slices(k_idx, s, d, out)]
        for gi in range(g):
            wk = w[(slice(gi * mg, (gi + 1) * mg), slice(None)) + k_idx]
            y[:, gi * mg:(gi + 1) * mg] += np.einsum("nc...,mc->nm...", patch[:, gi * cg:(gi + 1) * cg], wk)
    if b is not None:
        y += b.astype(np.float64).reshape((1, m) + (1,) * len(kernel))
    return y


def np_conv_transpose(x, w, b, a):
    """Scatter form: input position h adds x[h] * w[k] into output h*s + k*dil - pad."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    r = x.ndim - 2
    kernel = list(w.shape[2:])
    s = a.get("strides") or [1] * r
    d = a.get("dilations") or [1] * r
    pads = a.get("pads") or [0] * (2 * r)
    op = a.get("output_padding") or [0] * r
    g = a.get("group", 1)
    n, c = x.shape[:2]
    cg, mg = c // g, w.shape[1]
    full = [si * (h - 1) + (k - 1) * di + 1 + o for si, h, k, di, o in zip(s, x.shape[2:], kernel, d, op)]
    y = np.zeros((n, mg * g, *full))
    for k_idx in np.ndindex(*kernel):
        sl = (slice(None), slice(None)) + tuple(
            slice(k * di, k * di + (h - 1) * si + 1, si) for k, di, h, si in zip(k_idx, d, x.shape[2:], s))
        for gi in range(g):
            wk = w[(slice(gi * cg, (gi + 1) * cg), slice(None)) + k_idx]
            contrib = np.einsum("nc...,cm->nm...", x[:, gi * cg:(gi + 1) * cg], wk)
            y[(slice(None), slice(gi * mg, (gi + 1) * mg)) + sl[2:]] += contrib
    out = [f - pads[i] - pads[r + i] for i, f in enumerate(full)]
    y = y[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + out[i]) for i in range(r))]
    if b is not None:
        y = y + b.astype(np.float64).reshape((1, -1) + (1,) * r)
    return y


def torch_conv(x, w, a):
    import torch.nn.functional as F
    r = x.dim() - 2
    s, d, pb, pe, out = geometry(tuple(x.shape), list(w.shape[2:]), a)
    xp = torch_pad(x, pb, pe, [0] * r, 0.0)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[r]
    return fn(xp, w, None, stride=s, dilation=d, groups=a.get("group", 1))


def torch_conv_transpose(x, w, a):
    import torch.nn.functional as F
    r = x.dim() - 2
    s = a.get("strides") or [1] * r
    d = a.get("dilations") or [1] * r
    pads = a.get("pads") or [0] * (2 * r)
    op = a.get("output_padding") or [0] * r
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[r]
    y = fn(x, w, None, stride=s, output_padding=op, groups=a.get("group", 1), dilation=d)
    return y[(slice(None), slice(None)) + tuple(
        slice(pads[i], y.shape[2 + i] - pads[r + i]) for i in range(r))]


def grad_ref(forward):
    """dX, dW, dB of forward(X, W) + B through torch autograd in f64."""
    def ref(i, a):
        import torch
        x = torch.tensor(i["X"].astype(np.float64), requires_grad=True)
        w = torch.tensor(i["W"].astype(np.float64), requires_grad=True)
        y = forward(x, w, a)
        b = torch.zeros(y.shape[1], dtype=torch.float64, requires_grad=True)
        y = y + b.reshape((1, -1) + (1,) * (y.dim() - 2))
        y.backward(torch.tensor(i["dY"].astype(np.float64)))
        return {"dX": x.grad.numpy(), "dW": w.grad.numpy(), "dB": b.grad.numpy()}
    return ref


def conv_cases():
    out = []
    conv = [  # X shape, W shape, attrs, bias, dtype
        ((2, 3, 11), (4, 3, 3), {"strides": [2], "pads": [1, 2]}, True, np.float32),
        ((2, 4, 7, 6), (6, 2, 3, 2), {"group": 2, "pads": [1, 0, 1, 1], "strides": [2, 1],
                                      "dilations": [1, 2]}, True, np.float64),
        ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), {"pads": [1, 1, 1, 1, 1, 1], "strides": [1, 2, 1]},
         True, np.float32),
        ((1, 2, 7, 5), (3, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, False, np.float32),
        ((2, 3, 9), (2, 3, 4), {"auto_pad": "SAME_LOWER"}, True, np.float64),
        ((1, 2, 6, 7), (3, 2, 3, 2), {"auto_pad": "VALID", "strides": [2, 3]}, False, np.float32),
        ((1, 4, 6, 5), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}, True, np.float32),
        ((1, 2, 6, 5), (3, 2, 3, 3), {"pads": [1, 1, 1, 1]}, True, np.float16),
        # big enough for the register-blocked GEMM schedule (the cases above are not)
        ((2, 4, 12, 10), (8, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, True, np.float32),
        ((2, 3, 32, 32), (16, 3, 4, 4), {"strides": [4, 4]}, True, np.float32),
    ]
    for xs, ws, attrs, bias, dt in conv:
        inputs = {"X": rand(*xs, dt=dt), "W": rand(*ws, dt=dt)}
        if bias:
            inputs["B"] = rand(ws[0], dt=dt)
        out.append(Case("conv", inputs,
                        lambda i, a: {"Y": np_conv(i["X"], i["W"], i.get("B"), a)},
                        attrs=attrs, scale=4 if dt != np.float16 else 8))
    grads = [
        ((2, 3, 11), (4, 3, 3), {"strides": [2], "pads": [1, 2], "dilations": [2]}, np.float64),
        ((2, 4, 7, 6), (6, 2, 3, 2), {"group": 2, "pads": [1, 0, 1, 1], "strides": [2, 1],
                                      "dilations": [1, 2]}, np.float64),
        ((1, 2, 5, 4, 5), (2, 2, 2, 3, 2), {"pads": [1, 0, 1, 0, 1, 1], "strides": [2, 1, 2]},
         np.float32),
        ((2, 4, 12, 10), (8, 4, 3, 3), {"pads": [1, 1, 1, 1]}, np.float32),
        ((2, 3, 16, 16), (16, 3, 4, 4), {"strides": [4, 4]}, np.float32),
    ]
    for xs, ws, attrs, dt in grads:
        x, w = rand(*xs, dt=dt), rand(*ws, dt=dt)
        y = np_conv(x, w, None, attrs)
        out.append(Case("conv_grad", {"X": x, "W": w, "dY": rand(*y.shape, dt=dt)},
                        grad_ref(torch_conv), attrs=attrs, scale=4))
    transpose = [
        ((2, 3, 5), (3, 2, 3), {"strides": [2], "pads": [1, 0], "output_padding": [1]}, True,
         np.float32),
        ((1, 4, 4, 3), (4, 3, 3, 2), {"group": 2, "strides": [2, 3], "dilations": [1, 2],
                                      "pads": [1, 1, 0, 2]}, True, np.float64),
        ((1, 2, 3, 2, 3), (2, 2, 2, 2, 3), {"strides": [2, 1, 2]}, False, np.float32),
        ((2, 8, 6, 5), (8, 4, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, True, np.float32),
    ]
    for xs, ws, attrs, bias, dt in transpose:
        inputs = {"X": rand(*xs, dt=dt), "W": rand(*ws, dt=dt)}
        if bias:
            inputs["B"] = rand(ws[1] * attrs.get("group", 1), dt=dt)
        out.append(Case("conv_transpose", inputs,
                        lambda i, a: {"Y": np_conv_transpose(i["X"], i["W"], i.get("B"), a)},
                        attrs=attrs, scale=4))
        x, w = inputs["X"].astype(np.float64), inputs["W"].astype(np.float64)
        y = np_conv_transpose(x, w, None, attrs)
        out.append(Case("conv_transpose_grad", {"X": x, "W": w, "dY": rand(*y.shape, dt=np.float64)},
                        grad_ref(torch_conv_transpose), attrs=attrs))
    return out


# --- pooling ----------------------------------------------------------------------------

def pool(lib, x, a, average):
    """max or average pooling of a NumPy array (lib 'np') or torch tensor (lib 'torch')."""
    kernel = list(a["kernel_shape"])
    s, d, pb, pe, out = geometry(tuple(x.shape), kernel, a)
    extra = overhang(tuple(x.shape), kernel, s, d, pb, pe, out)
    pad = np_pad if lib == "np" else torch_pad
    xp = pad(x, pb, pe, extra, 0.0 if average else -np.inf)
    parts = [xp[window_slices(k, s, d, out)] for k in np.ndindex(*kernel)]
    if not average:
        if lib == "np":
            return np.max(np.stack(parts), axis=0)
        import torch
        return torch.stack(parts).max(dim=0).values
    total = sum(parts)
    # The divisor: window positions inside the input (or the padded input).
    inside = np.ones((1, 1) + tuple(x.shape[2:]))
    if a.get("count_include_pad", 0):
        inside = np_pad(inside, pb, pe, [0] * len(kernel), 1.0)
        inside = np_pad(inside, [0] * len(kernel), [0] * len(kernel), extra, 0.0)
    else:
        inside = np_pad(inside, pb, pe, extra, 0.0)
    count = sum(inside[window_slices(k, s, d, out)] for k in np.ndindex(*kernel))
    if lib != "np":
        import torch
        count = torch.tensor(count)
    return total / count


def pool_grad_ref(average):
    def ref(i, a):
        import torch
        x = torch.tensor(i["X"].astype(np.float64), requires_grad=True)
        pool("torch", x, a, average).backward(torch.tensor(i["dY"].astype(np.float64)))
        return {"dX": x.grad.numpy()}
    return ref


def pool_cases():
    out = []
    shapes = [  # X shape, attrs (kernel_shape always), dtype
        ((2, 3, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 1, 1, 0]}, np.float32),
        ((2, 3, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 1, 1, 0],
                        "ceil_mode": 1}, np.float64),
        ((2, 3, 13), {"kernel_shape": [3], "strides": [2], "pads": [1, 2], "dilations": [2]}, np.float32),
        ((1, 2, 5, 6, 5), {"kernel_shape": [2, 2, 3], "strides": [2, 2, 2], "ceil_mode": 1}, np.float64),
        ((1, 2, 7, 5), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, np.float32),
        ((1, 3, 6, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}, np.float32),
    ]
    for xs, attrs, dt in shapes:
        x = rand(*xs, dt=dt)
        out.append(Case("max_pool", {"X": x}, lambda i, a: {"Y": pool("np", i["X"], a, False)},
                        attrs=attrs))
        for include in ((0, 1) if xs[2] == 7 and len(xs) == 4 and "pads" in attrs else (0,)):
            a2 = dict(attrs, count_include_pad=include)
            out.append(Case("average_pool", {"X": x}, lambda i, a: {"Y": pool("np", i["X"], a, True)},
                            attrs=a2, scale=2))
    for xs, attrs, dt in shapes[:4]:
        x = rand(*xs, dt=np.float64)
        y = pool("np", x, attrs, False)
        dy = rand(*y.shape, dt=np.float64)
        out.append(Case("max_pool_grad", {"X": x, "dY": dy}, pool_grad_ref(False), attrs=attrs))
        a2 = dict(attrs, count_include_pad=1 if xs[2] == 7 else 0)
        out.append(Case("average_pool_grad", {"X": x, "dY": dy}, pool_grad_ref(True), attrs=a2))
    for xs, dt in (((2, 3, 5, 7), np.float32), ((2, 3, 4, 3, 5), np.float64)):
        x = rand(*xs, dt=dt)
        axes = tuple(range(2, len(xs)))
        out.append(Case("global_average_pool", {"X": x},
                        lambda i, a, axes=axes: {"Y": np.mean(i["X"].astype(np.float64), axis=axes, keepdims=True)}))
        out.append(Case("global_max_pool", {"X": x},
                        lambda i, a, axes=axes: {"Y": np.max(i["X"], axis=axes, keepdims=True)}))
    for xs in ((2, 3, 5, 7), (3, 2, 9)):
        x = rand(*xs, dt=np.float64)
        dy = rand(*xs[:2], *[1] * (len(xs) - 2), dt=np.float64)

        def gref(i, a, is_max):
            import torch
            import torch.nn.functional as F
            x = torch.tensor(i["X"], requires_grad=True)
            r = x.dim() - 2
            if is_max:
                y = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d}[r](x, 1)
            else:
                y = x.mean(dim=tuple(range(2, x.dim())), keepdim=True)
            y.backward(torch.tensor(i["dY"]))
            return {"dX": x.grad.numpy()}
        out.append(Case("global_average_pool_grad", {"X": x, "dY": dy},
                        lambda i, a: gref(i, a, False)))
        out.append(Case("global_max_pool_grad", {"X": x, "dY": dy}, lambda i, a: gref(i, a, True)))
    return out




# --- resize (ONNX Resize, written out per axis in NumPy) --------------------------------

def np_resize(x, a):
    mode = a.get("mode", "nearest")
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    nm = a.get("nearest_mode", "round_prefer_floor")
    y = x.astype(np.float64) if mode == "linear" else x
    for d in range(x.ndim):
        n = x.shape[d]
        if a.get("scales"):
            s = float(a["scales"][d])
            out = int(np.floor(n * s))
        else:
            out = a["sizes"][d]
            s = out / n
        if out == n and s == 1.0:
            continue
        o = np.arange(out, dtype=np.float64)
        if ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and out > 1):
            c = (o + 0.5) / s - 0.5
        elif ctm == "asymmetric":
            c = o / s
        elif ctm == "align_corners" and out > 1:
            c = o * float(n - 1) / float(out - 1)
        else:
            c = o * 0.0
        if mode == "nearest":
            r = {"round_prefer_floor": np.ceil(c - 0.5), "round_prefer_ceil": np.floor(c + 0.5),
                 "floor": np.floor(c), "ceil": np.ceil(c)}[nm]
            y = np.take(y, np.clip(r, 0, n - 1).astype(np.int64), axis=d)
        else:
            c = np.clip(c, 0, n - 1)
            lo = np.floor(c).astype(np.int64)
            hi = np.minimum(lo + 1, n - 1)
            w = (c - np.floor(c)).reshape([-1 if k == d else 1 for k in range(x.ndim)])
            y = np.take(y, lo, axis=d) * (1 - w) + np.take(y, hi, axis=d) * w
    return y


def torch_resize_grad(i, a):
    """resize written with torch ops over the NumPy index tables, differentiated by autograd."""
    import torch
    x = torch.tensor(i["X"].astype(np.float64), requires_grad=True)
    y = x
    for d in range(x.dim()):
        n = x.shape[d]
        if a.get("scales"):
            s = float(a["scales"][d])
            out = int(np.floor(n * s))
        else:
            out = a["sizes"][d]
            s = out / n
        if out == n and s == 1.0:
            continue
        # The same tables as np_resize, from a one-axis run on an index ramp.
        ramp = np.arange(n, dtype=np.float64)
        one = dict(a, scales=[s] if a.get("scales") else [], sizes=[] if a.get("scales") else [out])
        if a.get("mode", "nearest") == "nearest":
            idx = np_resize(ramp, one).astype(np.int64)
            y = torch.index_select(y, d, torch.tensor(idx))
        else:
            c = np_resize(ramp, one)  # the clamped source coordinate
            lo = np.floor(c).astype(np.int64)
            hi = np.minimum(lo + 1, n - 1)
            w = torch.tensor(c - lo).reshape([-1 if k == d else 1 for k in range(x.dim())])
            y = torch.index_select(y, d, torch.tensor(lo)) * (1 - w) + \
                torch.index_select(y, d, torch.tensor(hi)) * w
    y.backward(torch.tensor(i["dY"]))
    return {"dX": x.grad.numpy()}


def resize_cases():
    out = []
    for xs, attrs, dt in (
            ((1, 2, 5, 7), {"scales": [1, 1, 2, 1.5]}, np.float32),
            ((1, 2, 5, 7), {"sizes": [1, 2, 3, 4], "nearest_mode": "floor",
                            "coordinate_transformation_mode": "asymmetric"}, np.float32),
            ((2, 3, 7), {"sizes": [2, 3, 12], "nearest_mode": "round_prefer_ceil",
                         "coordinate_transformation_mode": "align_corners"}, np.int64),
            ((1, 2, 5, 7), {"mode": "linear", "scales": [1, 1, 2, 1.5]}, np.float32),
            ((1, 2, 6, 5), {"mode": "linear", "sizes": [1, 2, 4, 9],
                            "coordinate_transformation_mode": "align_corners"}, np.float64),
            ((2, 3, 4, 3, 5), {"mode": "linear", "scales": [1, 1, 2, 2, 0.6],
                               "coordinate_transformation_mode": "asymmetric"}, np.float64),
            ((3, 9), {"mode": "linear", "sizes": [3, 1],
                      "coordinate_transformation_mode": "pytorch_half_pixel"}, np.float64)):
        x = rand(*xs, dt=dt) if dt != np.int64 else RNG.integers(-9, 9, size=xs)
        out.append(Case("resize", {"X": x}, lambda i, a: {"Y": np_resize(i["X"], a)}, attrs=attrs))
        if dt == np.float64 or xs == (1, 2, 5, 7):
            x = x.astype(np.float64)
            dy = rand(*np_resize(x, attrs).shape, dt=np.float64)
            out.append(Case("resize_grad", {"X": x, "dY": dy}, torch_resize_grad, attrs=attrs))
    return out


def cases():
    return conv_cases() + pool_cases() + resize_cases()

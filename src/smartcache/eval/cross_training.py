"""Training the cross-encoder on the harvest: the pairs a lookup weighs, with their labels.

    harvest rows (probe side, cached side, same / modify / different)
        --bottom: frozen lower layers, once per distinct side-->  hidden states, kept in memory
        --top: adapted top layers and the head, a few epochs-->  the adapter (~2 MB)

Rows are the harvest's (``training.harvest``): every candidate that the pre-filter
found and no hard veto settled, each described as a lookup describes it. Only the two
most similar unvetoed candidates of a case are kept, as serving reads only those.

Held-out probabilities for the stacked verifier come from two models trained on
complementary halves of the source families (``FOLDS``): each row is scored by the model
that never saw its family. The shipped adapter, trained on every family, comes first.

Training is resumable: every ``checkpoint_every`` steps the adapter, the optimiser and
the step are written beside the output; a run restarted with the same settings goes on
from there.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from smartcache.decide.cross_encoder import SERVED, Side, pad, side_ids, words
from smartcache.eval.training import Harvest, family_of, family_weights

# Two halves of the source families, of about equal size with the public pairs, each with
# English (QQP / the generator) and Chinese: a row's held-out probability comes from the
# half that lacks its family.
FOLDS = (frozenset({"qqp", "lcqmc", "crosswoz", "stsb"}), frozenset({"gen", "atec", "bq", "pawsx"}))


def fold_of(family: str) -> int:
    """The half of ``FOLDS`` that holds ``family`` out; a family not named there, by a hash."""
    import zlib
    return next((k for k, fold in enumerate(FOLDS) if family in fold), zlib.crc32(family.encode()) % len(FOLDS))


@dataclass(frozen=True)
class Settings:
    epochs: float = 2.0
    batch: int = 32
    lr: float = 3e-4
    head_lr: float = 1e-3
    warmup: float = 0.05            # share of the steps
    seed: int = 0
    checkpoint_every: int = 200
    threads: int = 2

    def digest(self, rows: int) -> str:
        return hashlib.sha256(json.dumps({**asdict(self), "rows": rows}, sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class Pairs:
    """The rows the cross-encoder is trained on, as indexes into a table of distinct sides."""

    sides: list[Side]
    a: np.ndarray           # [rows] index of the probe side
    b: np.ndarray           # [rows] index of the cached side
    y: np.ndarray           # [rows] 0 same, 1 modify, 2 different
    family: np.ndarray      # [rows] source family
    row: np.ndarray         # [rows] index into the harvest's rows

    def subset(self, keep: np.ndarray) -> "Pairs":
        return Pairs(self.sides, self.a[keep], self.b[keep], self.y[keep], self.family[keep], self.row[keep])


def pairs_of(h: Harvest) -> Pairs:
    """The harvest's rows that serving reads (the first ``SERVED`` unvetoed of each case)."""
    index: dict[Side, int] = {}
    sides: list[Side] = []

    def at(side: Side) -> int:
        if side not in index:
            index[side] = len(sides)
            sides.append(side)
        return index[side]

    a, b, rows = [], [], []
    for i, (sides_row, rank) in enumerate(zip(h.sides, h.rank)):
        if rank >= SERVED:
            continue
        pt, pd, ct, cd = sides_row
        a.append(at(Side(pt, pd)))
        b.append(at(Side(ct, cd)))
        rows.append(i)
    rows_ = np.asarray(rows, np.int64)
    y = np.asarray(h.y, np.int64)[rows_] if rows else np.zeros(0, np.int64)
    fam = np.asarray([family_of(h.cases[h.case[r]]["source"]) for r in rows], dtype=object)
    return Pairs(sides, np.asarray(a, np.int64), np.asarray(b, np.int64), y, fam, rows_)


# Further public pairs for the cross-encoder alone, beyond those the harvest placed in cases:
# it has a million weights to fit where the trees have a few thousand leaves. Each keeps its
# family, so the folds hold them out with it.
PUBLIC = {"qqp": 15000, "lcqmc": 5000, "bq": 6000, "atec": 8000, "stsb": 3000}


def public_pairs(data: Path, pairs: Pairs, seed: int = 0, counts: dict[str, int] | None = None,
                 say: Callable[[str], None] = print) -> Pairs:
    """``pairs`` with rows of the public sets added (single turns, labelled same or different,
    ``row`` -1), leaving out the pairs already there."""
    from smartcache.context.normalize import normalize_text
    from smartcache.eval.calibrate import load_pair_set

    index = {side: i for i, side in enumerate(pairs.sides)}
    sides = list(pairs.sides)
    known = {(pairs.sides[a].turn, pairs.sides[b].turn) for a, b in zip(pairs.a, pairs.b)}
    a, b, y, fam = [], [], [], []

    def at(text: str) -> int:
        side = Side(normalize_text(text))
        if side not in index:
            index[side] = len(sides)
            sides.append(side)
        return index[side]

    for name, count in (counts or PUBLIC).items():
        try:
            rows = load_pair_set(name, data, limit=count * 2, seed=seed)
        except (OSError, KeyError) as exc:
            say(f"note: {name} skipped ({exc})")
            continue
        added = 0
        for ta, tb, label in rows:
            if added >= count:
                break
            ia, ib = at(ta), at(tb)
            if (sides[ia].turn, sides[ib].turn) in known or ia == ib:
                continue
            a.append(ia)
            b.append(ib)
            y.append(0 if label else 2)
            fam.append(name)
            added += 1
    return Pairs(sides, np.concatenate([pairs.a, np.asarray(a, np.int64)]),
                 np.concatenate([pairs.b, np.asarray(b, np.int64)]), np.concatenate([pairs.y, np.asarray(y, np.int64)]),
                 np.concatenate([pairs.family, np.asarray(fam, dtype=object)]),
                 np.concatenate([pairs.row, np.full(len(a), -1, np.int64)]))


class Bottoms:
    """The frozen lower layers' output for every distinct side, computed once, kept as fp16."""

    def __init__(self, net: Any, sides: Sequence[Side], *, batch: int = 64,
                 progress: Callable[[int], None] | None = None) -> None:
        import torch
        tok = net.base.tokenizer
        weights = net.base.weights
        ids = [side_ids(tok, s) for s in sides]
        self.states: list[Any] = [None] * len(sides)
        order = sorted(range(len(sides)), key=lambda i: len(ids[i]))   # similar lengths pad little
        with torch.no_grad():
            for start in range(0, len(order), batch):
                chunk = order[start:start + batch]
                tokens, mask = pad([ids[i] for i in chunk], tok.pad)
                hidden = net.bottom(torch.from_numpy(words(weights, tokens)), torch.from_numpy(mask))
                for j, i in enumerate(chunk):
                    self.states[i] = hidden[j, : len(ids[i])].to(torch.float16).clone()
                if progress:
                    progress(len(chunk))

    def batch(self, index: Sequence[int]):
        import torch
        rows = [self.states[i] for i in index]
        width = max(r.shape[0] for r in rows)
        out = torch.zeros(len(rows), width, rows[0].shape[1])
        mask = torch.zeros(len(rows), width)
        for j, r in enumerate(rows):
            out[j, : r.shape[0]] = r.float()
            mask[j, : r.shape[0]] = 1.0
        return out, mask


def _bar(label: str):
    from tqdm import tqdm
    return tqdm(desc=label, unit="step", file=sys.stderr, dynamic_ncols=True, mininterval=2.0)


def train_adapter(net: Any, bottoms: Bottoms, pairs: Pairs, settings: Settings, checkpoint: Path,
                  label: str = "cross-encoder") -> dict[str, np.ndarray]:
    """Fit the adapter on ``pairs``; resumes from ``checkpoint`` when it holds the same run."""
    import torch
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    n = len(pairs.y)
    if n == 0:
        raise ValueError(f"{label}: no rows to train on")
    steps_per_epoch = max(1, math.ceil(n / settings.batch))
    total = max(1, int(round(settings.epochs * steps_per_epoch)))
    weights = torch.from_numpy(family_weights(pairs.family).astype(np.float32)) if n else torch.zeros(0)
    params = [p for name, p in net.named_parameters() if p.requires_grad and not name.startswith("head")]
    optimiser = torch.optim.AdamW([{"params": params, "lr": settings.lr},
                                   {"params": list(net.head.parameters()), "lr": settings.head_lr}],
                                  weight_decay=0.01)
    warm = max(1, int(total * settings.warmup))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm)))
    digest, step = settings.digest(n), 0
    if checkpoint.is_file():
        saved = torch.load(checkpoint, weights_only=True)
        if saved.get("digest") == digest:
            net.load_trained({k: v.numpy() for k, v in saved["trained"].items()})
            optimiser.load_state_dict(saved["optimiser"])
            schedule.load_state_dict(saved["schedule"])
            step = int(saved["step"])
    rng = np.random.default_rng(settings.seed)
    orders = [rng.permutation(n) for _ in range(math.ceil(total / steps_per_epoch))]
    bar = _bar(label)
    bar.reset(total=total)
    bar.update(step)
    net.train()
    loss_sum, seen = 0.0, 0
    while step < total:
        epoch, within = divmod(step, steps_per_epoch)
        pick = orders[epoch][within * settings.batch:(within + 1) * settings.batch]
        xa, ma = bottoms.batch(pairs.a[pick])
        xb, mb = bottoms.batch(pairs.b[pick])
        logits = net.top(xa, ma, xb, mb)
        target = torch.from_numpy(pairs.y[pick])
        loss = (torch.nn.functional.cross_entropy(logits, target, reduction="none") * weights[pick]).mean()
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimiser.step()
        schedule.step()
        step += 1
        loss_sum, seen = loss_sum + float(loss), seen + 1
        bar.update(1)
        if step % 20 == 0:
            bar.set_postfix(loss=f"{loss_sum / seen:.3f}")
            loss_sum, seen = 0.0, 0
        if step % settings.checkpoint_every == 0 or step == total:
            tmp = checkpoint.with_name(checkpoint.name + ".tmp")
            torch.save({"digest": digest, "step": step, "optimiser": optimiser.state_dict(),
                        "schedule": schedule.state_dict(),
                        "trained": {k: torch.from_numpy(v) for k, v in net.trained().items()}}, tmp)
            os.replace(tmp, checkpoint)
    bar.close()
    net.eval()
    return net.trained()


def predict(net: Any, bottoms: Bottoms, pairs: Pairs, batch: int = 64) -> np.ndarray:
    import torch
    out = np.zeros((len(pairs.y), 3), np.float32)
    with torch.no_grad():
        for start in range(0, len(pairs.y), batch):
            sl = slice(start, start + batch)
            xa, ma = bottoms.batch(pairs.a[sl])
            xb, mb = bottoms.batch(pairs.b[sl])
            out[sl] = torch.softmax(net.top(xa, ma, xb, mb), -1).numpy()
    return out


def fresh(net: Any, initial: dict[str, np.ndarray]) -> Any:
    net.load_trained(initial)
    return net


def train_all(h: Harvest, out: Path, work: Path, settings: Settings = Settings(), *, data: Path | None = None,
              public: dict[str, int] | None = None, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The shipped adapter on every family, written to ``out``, then both fold models (their
    held-out probabilities, saved to ``work/held_out.npz``; ``out`` is rewritten with their
    report). ``data``: the public sets'
    folder, for ``public_pairs`` (None: the harvest's rows alone)."""
    from smartcache.decide.cross_encoder import write_adapter
    from smartcache.decide.cross_model import ALPHA, LAYERS, RANK, SPLIT, build

    started = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    pairs = pairs_of(h)
    if len(pairs.y) == 0:
        raise ValueError("the harvest has no rows to train the cross-encoder on")
    harvested = len(pairs.y)
    if data is not None:
        pairs = public_pairs(data, pairs, settings.seed, public, say)
    net = build()
    initial = net.trained()
    say(f"{len(pairs.y)} pairs, {len(pairs.sides)} distinct sides; the frozen layers over each side")
    bar = _bar("lower layers")
    bar.reset(total=len(pairs.sides))
    bottoms = Bottoms(net, pairs.sides, progress=bar.update)
    bar.close()
    # The shipped adapter first: it can be tried on the development sets while the folds train.
    trained = train_adapter(net, bottoms, pairs, settings, work / "full.ckpt", "shipped")
    meta = {"layers": LAYERS, "split": SPLIT, "rank": RANK, "alpha": ALPHA, "settings": asdict(settings), "pairs": int(len(pairs.y)),
            "harvested_pairs": harvested, "families": {f: int((pairs.family == f).sum()) for f in sorted(set(pairs.family))},
            "classes": [int((pairs.y == c).sum()) for c in range(3)], "folds": []}
    write_adapter(out, trained, meta)
    held = np.full((len(h.y), 3), np.nan, np.float32)
    folds = np.asarray([fold_of(f) for f in pairs.family])
    for k in range(len(FOLDS)):
        train_rows = folds != k
        fresh(net, initial)
        train_adapter(net, bottoms, pairs.subset(train_rows), settings, work / f"fold{k}.ckpt", f"fold {k + 1} of 2")
        scored = ~train_rows & (pairs.row >= 0)
        held[pairs.row[scored]] = predict(net, bottoms, pairs.subset(scored))
        meta["folds"].append({"held_out": sorted(set(pairs.family[~train_rows])), "train_rows": int(train_rows.sum()),
                              "held_rows": int((~train_rows).sum())})
    np.savez_compressed(work / "held_out.npz", probs=held, rows=len(h.y))
    meta["seconds"] = round(time.perf_counter() - started, 1)
    write_adapter(out, trained, meta)
    return meta


def held_out_probs(work: Path, rows: int) -> np.ndarray:
    """The fold models' probabilities per harvest row (NaN where serving reads none)."""
    with np.load(work / "held_out.npz") as data:
        if int(data["rows"]) != rows:
            raise ValueError(f"{work / 'held_out.npz'} was made from another harvest")
        return np.asarray(data["probs"])


__all__ = ["FOLDS", "fold_of", "Pairs", "Settings", "held_out_probs", "pairs_of", "train_all"]

"""Line profiler realistic case: a small JSON-ish tokenizer and parser plus a
dict-heavy aggregation, with many profiled function calls."""
import random
import sys

try:
    profile
except NameError:
    def profile(f):
        return f


def make_text(n, seed=1):
    rnd = random.Random(seed)
    items = []
    for i in range(n):
        items.append('{"id": %d, "name": "item%d", "tags": ["a%d", "b"], '
                     '"price": %d.%02d, "ok": %s}'
                     % (i, i, rnd.randrange(50), rnd.randrange(1000),
                        rnd.randrange(100), "true" if i % 3 else "false"))
    return "[" + ", ".join(items) + "]"


@profile
def tokenize(text):
    toks = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in " \n\t,:":
            i += 1
        elif ch in "[]{}":
            toks.append(ch)
            i += 1
        elif ch == '"':
            j = text.index('"', i + 1)
            toks.append(("s", text[i + 1:j]))
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in " \n\t,:]}":
                j += 1
            toks.append(("v", text[i:j]))
            i = j
    return toks


@profile
def parse_value(toks, pos):
    t = toks[pos]
    if t == "[":
        return parse_list(toks, pos + 1)
    if t == "{":
        return parse_dict(toks, pos + 1)
    if t[0] == "s":
        return t[1], pos + 1
    return parse_scalar(t[1]), pos + 1


@profile
def parse_scalar(s):
    if s == "true":
        return True
    if s == "false":
        return False
    if "." in s:
        return float(s)
    return int(s)


@profile
def parse_list(toks, pos):
    out = []
    while toks[pos] != "]":
        v, pos = parse_value(toks, pos)
        out.append(v)
    return out, pos + 1


@profile
def parse_dict(toks, pos):
    out = {}
    while toks[pos] != "}":
        key = toks[pos][1]
        v, pos = parse_value(toks, pos + 1)
        out[key] = v
    return out, pos + 1


@profile
def aggregate(records):
    by_tag = {}
    for r in records:
        if not r["ok"]:
            continue
        for tag in r["tags"]:
            acc = by_tag.setdefault(tag, {"n": 0, "sum": 0.0})
            acc["n"] += 1
            acc["sum"] += r["price"]
    return {k: v["sum"] / v["n"] for k, v in by_tag.items()}


def main(n, rounds):
    text = make_text(n)
    out = None
    for _ in range(rounds):
        records, _ = parse_value(tokenize(text), 0)
        out = aggregate(records)
    return len(out)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    print(main(n, rounds))

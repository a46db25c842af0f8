"""A stored autotune entry read as untrusted text: bounded in size and nesting before it is parsed, then checked
against the entry's schema before anything uses it.

The store is the caller's (IndexedDB, a JSON file, their own object), so an entry may be anything: a JSON
text nested 5,000 levels deep overflows `json.loads`'s recursion (a RecursionError in CPython, a fatal stack
overflow in Pyodide), params with unknown keys or wrong types would reach the planner as a "measured" choice.
`parse` refuses all of that with EntryError (one line saying why), which autotune.stored_choice turns into a
warning and a fresh search.

Schema (what app/autotune.py writes): {"format": FORMAT, "variant": a known variant name, "params": null or
{key: int}, "adapter": {...}, "revision": str, "times": [...]}; params only the keys of the variant's Tunable
(`Tunable.names`: its defaults for the request and its configurations' switches), each an int (a bool where the
default is one) within +-MAX_PARAM.
"""
from __future__ import annotations

import json
import re

MAX_CHARS = 64 * 1024  # an entry as autotune writes it is under 2 KB (six timed candidates at most)
MAX_DEPTH = 8  # entry {} > times [] > time {} > params {}: 4 levels are used
MAX_PARAM = 1 << 16  # tile sizes, lanes, split counts: far below this


class EntryError(ValueError):
    """A stored entry that is not one autotune could have written (the message says what is wrong)."""


# One token per escape pair, quote or bracket: a JSON text's brackets are few (test.json: 4,418 in 18 MB), so this
# walks far fewer items than a loop over its characters (0.18 s against 0.73 s on test.json).
_TOKENS = re.compile(r'\\.|["\[\]{}]', re.S)


def nesting(text: str) -> int:
    """The deepest bracket nesting of a JSON text, brackets inside strings not counted (one linear pass, no
    recursion: the point is to know this before json.loads recurses; app/cases.py bounds case files by it too)."""
    depth = deepest = 0
    in_string = False
    for token in _TOKENS.findall(text):
        if len(token) == 2:
            if in_string:
                continue
            token = token[1]  # a backslash outside a string escapes nothing (nor is it JSON): what follows counts
        if token == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in ("]", "}"):
            depth -= 1
    return deepest


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def loads_bounded(text, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH):
    """json.loads of a text checked first: a str of at most max_chars, nested at most max_depth deep, with no
    NaN or Infinity (Python's json takes them, JSON does not). EntryError otherwise."""
    if not isinstance(text, str):
        raise EntryError(f"the entry is a {type(text).__name__}, not a JSON text")
    if len(text) > max_chars:
        raise EntryError(f"the entry is {len(text)} characters, past the {max_chars} an entry may have")
    depth = nesting(text)
    if depth > max_depth:
        raise EntryError(f"the entry nests {depth} levels deep, past the {max_depth} an entry may have")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise EntryError(f"the entry is not JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None


def _param_refusal(key: str, value, default) -> str | None:
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"param {key!r} must be true or false, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"param {key!r} must be an integer, got {value!r}"
    if not -MAX_PARAM <= value <= MAX_PARAM:
        return f"param {key!r} = {value} is out of range (|value| <= {MAX_PARAM})"
    return None


def parse(text, fmt: int, variants: dict, geom, caps) -> dict:
    """A stored entry's text -> the entry dict, checked against the schema (EntryError otherwise).
    variants: name -> Variant (planner.VARIANTS); geom, caps: the request's, for the Tunable's keys."""
    entry = loads_bounded(text)
    if not isinstance(entry, dict):
        raise EntryError(f"the entry is a JSON {type(entry).__name__}, not an object")
    if entry.get("format") != fmt or isinstance(entry.get("format"), bool):
        raise EntryError(f"the entry's format is {entry.get('format')!r}, not {fmt}")
    variant = entry.get("variant")
    if not isinstance(variant, str) or variant not in variants:
        raise EntryError(f"the entry names no known variant ({str(variant)[:80]!r})")
    if "params" not in entry:
        raise EntryError("the entry has no params (null or an object)")
    params = entry["params"]
    if params is None:
        return entry
    if not isinstance(params, dict):
        raise EntryError(f"the entry's params are {type(params).__name__}, not an object or null")
    tunable = variants[variant].tunable
    if tunable is None:
        raise EntryError(f"{variant} takes no params, the entry gives {sorted(params)[:8]}")
    try:
        names = tunable.names(geom, caps)
    except Exception as exc:  # noqa: BLE001 - a variant for other shapes: its defaults need not apply here
        raise EntryError(f"{variant} does not take this request ({type(exc).__name__})") from None
    unknown = sorted(k for k in params if k not in names)
    if unknown:
        raise EntryError(f"params {unknown[:8]} are not {variant}'s (it takes {sorted(names)})")
    for k, v in params.items():
        why = _param_refusal(k, v, names[k])
        if why:
            raise EntryError(why)
    return entry


STORE_TIMEOUT_S = 5.0  # web/runtime/store.mjs STORE_TIMEOUT_MS: one limit for every store a caller passes


class StoreFailed(Exception):
    """The caller's store threw, timed out or is not a store (the message names the store and its error)."""


async def store_call(store, method: str, *args):
    """`await store.<method>(*args)`, any failure (a throw, a rejected promise, a method that is missing or does
    not return an awaitable, no answer within STORE_TIMEOUT_S) as StoreFailed naming the store."""
    import asyncio

    name = _store_name(store)
    try:
        return await asyncio.wait_for(_awaited(getattr(store, method)(*args)), STORE_TIMEOUT_S)
    except asyncio.TimeoutError:
        raise StoreFailed(f"the store's {method} ({name}) gave no answer in {STORE_TIMEOUT_S:.0f} s") from None
    except Exception as exc:  # noqa: BLE001 - the caller's code: whatever it raises is its failure, reported
        text = str(exc).strip().splitlines()
        why = f"{type(exc).__name__}: {text[-1] if text else ''}".rstrip(": ")
        raise StoreFailed(f"the store's {method} ({name}) failed: {why[:300]}") from None


def _store_name(store) -> str:
    """The store's class: a JS object's constructor name in Pyodide (JsProxy otherwise says nothing)."""
    name = type(store).__name__
    if name == "JsProxy":
        try:
            return str(store.constructor.name) or "a JS object"
        except Exception:  # noqa: BLE001 - a proxy with no constructor (Object.create(null))
            return "a JS object"
    return name


async def _awaited(value):
    return await value

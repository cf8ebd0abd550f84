"""Walking a JSON schema the way OpenAI's strict checker does, and measuring what it limits.

Split from ``_openai_rules`` so the rules module stays about rules; the limits themselves and
their error wording live there. The walk is iterative and capped, so neither a hostile deeply
nested dict nor a dict that contains itself can crash or hang it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "LARGE_ENUM_THRESHOLD",
    "MAX_WALK_DEPTH",
    "MAX_WALK_NODES",
    "EnumMeasure",
    "Path",
    "SchemaMeasures",
    "Visit",
    "definition_names",
    "measure_schema",
    "ref_target",
    "text_length",
    "walk",
]

Path = tuple[str | int, ...]

LARGE_ENUM_THRESHOLD = 250
# Legitimate schemas stay far below these (OpenAI allows 5000 properties and 10 levels); they
# only stop runaway input, such as a dict that contains itself or one nested 100k levels deep,
# whose paths alone would otherwise take memory quadratic in the depth.
MAX_WALK_NODES = 100_000
MAX_WALK_DEPTH = 100


class Visit(NamedTuple):
    """One sub-schema reached by :func:`walk`.

    Attributes:
        node: The sub-schema as found (not necessarily a dict).
        path: Keys and indexes from the root, e.g. ``("properties", "a", "anyOf", 0)``.
        unit: ``()`` inside the root schema, ``("$defs", name)`` inside a definition.
        depth: Levels below the start of ``unit``.
        cut: True when the node has sub-schemas that were not visited because it sits
            :data:`MAX_WALK_DEPTH` levels down.
    """

    node: object
    path: Path
    unit: Path
    depth: int
    cut: bool = False


class EnumMeasure(NamedTuple):
    """Size of one ``enum`` that has more than :data:`LARGE_ENUM_THRESHOLD` string values."""

    path: Path
    values: int
    chars: int


@dataclass(frozen=True)
class SchemaMeasures:
    """The quantities OpenAI limits, measured over one schema.

    Attributes:
        depth: Levels of nesting: each step into a property, ``items``, an ``anyOf`` branch or
            a definition adds one. ``$ref`` is followed as if inlined, stopping where a
            reference re-enters a definition it is already inside (recursion is allowed).
        properties: Object properties in the whole schema, definitions included.
        enum_values: Values across every ``enum``.
        string_budget: Total length of property names, definition names, enum values and
            const values (non-strings counted as their JSON text).
        deepest_path: Document path of the sub-schema that sets ``depth``.
        large_enums: The enums with more than :data:`LARGE_ENUM_THRESHOLD` string values.
        truncated: The walk stopped early (more than :data:`MAX_WALK_NODES` sub-schemas, or
            nesting beyond :data:`MAX_WALK_DEPTH`); the other numbers are then lower bounds.
    """

    depth: int
    properties: int
    enum_values: int
    string_budget: int
    deepest_path: Path = ()
    large_enums: tuple[EnumMeasure, ...] = ()
    truncated: bool = False


def walk(schema: object) -> Iterator[Visit]:
    """Yield every sub-schema OpenAI's checker looks at, in document order.

    Descends into ``properties``, ``items`` (a single schema only), ``anyOf`` and the root's
    ``$defs``/``definitions``; never into ``$ref`` targets or unsupported keywords. Stops
    after :data:`MAX_WALK_NODES` sub-schemas and does not go below :data:`MAX_WALK_DEPTH`.

    Args:
        schema: Any JSON-like value.

    Yields:
        One :class:`Visit` per sub-schema, the root first.
    """
    # An explicit stack, not recursion, so a deeply nested dict cannot overflow Python's.
    stack = [Visit(schema, (), (), 0)]
    for _ in range(MAX_WALK_NODES):
        if not stack:
            return
        visit = stack.pop()
        children = _children(visit)
        if children and visit.depth >= MAX_WALK_DEPTH:
            yield visit._replace(cut=True)
            continue
        yield visit
        stack.extend(reversed(children))


def _children(visit: Visit) -> list[Visit]:
    node, path, unit, depth, _ = visit
    if not isinstance(node, dict) or "$ref" in node:
        return []
    out: list[Visit] = []
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out.extend(
                Visit(sub, (*path, "properties", str(p)), unit, depth + 1)
                for p, sub in value.items()
            )
        elif key == "items" and isinstance(value, dict):
            out.append(Visit(value, (*path, "items"), unit, depth + 1))
        elif key == "anyOf" and isinstance(value, list):
            out.extend(
                Visit(sub, (*path, "anyOf", i), unit, depth + 1) for i, sub in enumerate(value)
            )
        elif key in ("$defs", "definitions") and path == () and isinstance(value, dict):
            for name, sub in value.items():
                def_path: Path = (str(key), str(name))
                out.append(Visit(sub, def_path, def_path, 0))
    return out


def definition_names(schema: object) -> set[Path]:
    """The root's definitions, as ``("$defs", name)`` / ``("definitions", name)`` pairs.

    Args:
        schema: The root schema.

    Returns:
        The definitions a ``$ref`` may point at.
    """
    names: set[Path] = set()
    if isinstance(schema, dict):
        for key in ("$defs", "definitions"):
            defs = schema.get(key)
            if isinstance(defs, dict):
                names.update((key, str(name)) for name in defs)
    return names


def ref_target(ref: object, definitions: set[Path]) -> Path | None:
    """Resolve a ``$ref`` the way strict mode allows: ``#`` or ``#/$defs/<name>``.

    Args:
        ref: The ``$ref`` value.
        definitions: What :func:`definition_names` returned for the root.

    Returns:
        ``()`` for the root, the definition's path, or None when it cannot be resolved.
    """
    if ref == "#":
        return ()
    if not isinstance(ref, str):
        return None
    for key in ("$defs", "definitions"):
        prefix = f"#/{key}/"
        if ref.startswith(prefix):
            target: Path = (key, ref[len(prefix) :].replace("~1", "/").replace("~0", "~"))
            return target if target in definitions else None
    return None


def text_length(value: object) -> int:
    """Characters a value costs in the string budget (non-strings as their JSON text).

    Args:
        value: An enum or const value.

    Returns:
        The length.
    """
    if isinstance(value, str):
        return len(value)
    try:
        return len(json.dumps(value, ensure_ascii=False, default=str))
    except (ValueError, TypeError, RecursionError):
        # Circular or absurdly deep values: their exact cost is not worth a crash.
        return 0


@dataclass
class _Unit:
    """The root or one definition: its own deepest point and the references it makes."""

    local: int = 0
    local_path: Path = ()
    refs: list[tuple[int, Path]] = field(default_factory=list)  # (depth of the $ref, target)


@dataclass
class _Frame:
    """One unit being measured; ``via`` is the depth of the reference that led into it."""

    unit: Path
    via: int
    next_ref: int = 0


def measure_schema(schema: object) -> SchemaMeasures:
    """Measure the quantities OpenAI limits (depth, properties, enum values, string budget).

    Args:
        schema: Any JSON-like value; parts that are not schemas are skipped.

    Returns:
        The measures; compare them with the ``MAX_*`` constants of ``_openai_rules``.
    """
    definitions = definition_names(schema)
    units: dict[Path, _Unit] = {(): _Unit()}
    counts = {"properties": 0, "enum": 0, "budget": 0, "nodes": 0}
    large: list[EnumMeasure] = []
    truncated = False
    for node, path, unit, depth, cut in walk(schema):
        counts["nodes"] += 1
        truncated = truncated or cut
        reach = depth + 1 if cut else depth  # at least one more level lies below a cut
        record = units.setdefault(unit, _Unit())
        if reach > record.local:
            record.local, record.local_path = reach, path
        if unit == path and path:
            counts["budget"] += len(str(path[-1]))  # a definition name
        if not isinstance(node, dict):
            continue
        target = ref_target(node.get("$ref"), definitions) if "$ref" in node else None
        if target is not None:
            record.refs.append((depth, target))
        _count(node, path, counts, large)
    depth, deepest = _overall_depth(units)
    return SchemaMeasures(
        depth=depth,
        properties=counts["properties"],
        enum_values=counts["enum"],
        string_budget=counts["budget"],
        deepest_path=deepest,
        large_enums=tuple(large),
        truncated=truncated or counts["nodes"] >= MAX_WALK_NODES,
    )


def _count(
    node: dict[object, object], path: Path, counts: dict[str, int], large: list[EnumMeasure]
) -> None:
    props = node.get("properties")
    if isinstance(props, dict) and "$ref" not in node:
        counts["properties"] += len(props)
        counts["budget"] += sum(len(str(p)) for p in props)
    if "const" in node:
        counts["budget"] += text_length(node["const"])
    enum = node.get("enum")
    if isinstance(enum, list):
        counts["enum"] += len(enum)
        counts["budget"] += sum(text_length(v) for v in enum)
        strings = [v for v in enum if isinstance(v, str)]
        if len(strings) > LARGE_ENUM_THRESHOLD:
            large.append(EnumMeasure(path, len(strings), sum(map(len, strings))))


def _overall_depth(units: dict[Path, _Unit]) -> tuple[int, Path]:
    heights = _heights(units)
    depth, deepest = heights[()]
    for key, (height, where) in heights.items():
        # An unreferenced definition still sits one level below the root.
        if key != () and height + 1 > depth:
            depth, deepest = height + 1, where
    return depth, deepest


def _heights(units: dict[Path, _Unit]) -> dict[Path, tuple[int, Path]]:
    """Height of every unit with references inlined.

    A reference back into a unit that is still being measured (recursion) counts only as
    itself. Iterative for the same reason as :func:`walk`.
    """
    done: dict[Path, tuple[int, Path]] = {}
    for start in units:
        if start in done:
            continue
        best = {start: (units[start].local, units[start].local_path)}
        frames = [_Frame(start, 0)]
        on_stack = {start}
        while frames:
            frame = frames[-1]
            refs = units[frame.unit].refs
            if frame.next_ref < len(refs):
                ref_depth, target = refs[frame.next_ref]
                frame.next_ref += 1
                if target in done:
                    best[frame.unit] = _deeper(best[frame.unit], ref_depth, done[target])
                elif target not in on_stack and target in units:
                    best[target] = (units[target].local, units[target].local_path)
                    frames.append(_Frame(target, ref_depth))
                    on_stack.add(target)
                continue
            frames.pop()
            on_stack.discard(frame.unit)
            done[frame.unit] = best[frame.unit]
            if frames:
                parent = frames[-1].unit
                best[parent] = _deeper(best[parent], frame.via, done[frame.unit])
    return done


def _deeper(current: tuple[int, Path], offset: int, below: tuple[int, Path]) -> tuple[int, Path]:
    return (offset + below[0], below[1]) if offset + below[0] > current[0] else current

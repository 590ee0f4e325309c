"""XML: SDMX-ML data messages become an observations table; other XML its most repeated record element.

The parser never resolves entities nor fetches DTDs: crawled XML is untrusted (XXE, billion laughs).
"""

from __future__ import annotations

from collections import Counter

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, trim


def _local(tag: object) -> str:
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _elements(elem) -> list:
    """Child elements only: comments, processing instructions and unexpanded entities are not fields."""
    return [c for c in elem if isinstance(c.tag, str)]


def _parse(data: bytes):
    from lxml import etree

    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
    )
    return etree.fromstring(data, parser=parser)


def _generic_values(elem, out: dict[str, str]) -> None:
    """<Value id="FREQ" value="A"/> (SDMX 2.1) or <Value concept="FREQ" value="A"/> (SDMX 2.0)."""
    for v in elem:
        if _local(v.tag) == "Value":
            key = v.get("id") or v.get("concept") or ""
            if key:
                out[key] = v.get("value", "")


def _sdmx_generic(root) -> list[dict[str, str]]:
    records: list[dict[str, str]] = []
    for elem in root.iter():
        name = _local(elem.tag)
        if name == "Series":
            series: dict[str, str] = {}
            for child in elem:
                if _local(child.tag) in ("SeriesKey", "Attributes"):
                    _generic_values(child, series)
            for obs in elem:
                if _local(obs.tag) == "Obs":
                    records.append({**series, **_generic_obs(obs)})
        elif name == "Obs" and _local(elem.getparent().tag) != "Series":
            records.append(_generic_obs(elem))
    return records


def _generic_obs(obs) -> dict[str, str]:
    rec: dict[str, str] = {}
    for part in obs:
        name = _local(part.tag)
        if name == "ObsDimension":
            rec[part.get("id") or "TIME_PERIOD"] = part.get("value", "")
        elif name == "Time":  # SDMX 2.0
            rec["TIME_PERIOD"] = (part.text or "").strip()
        elif name == "ObsValue":
            rec["OBS_VALUE"] = part.get("value", "")
        elif name in ("ObsKey", "Attributes"):
            _generic_values(part, rec)
    return rec


def _sdmx_structure_specific(root) -> list[dict[str, str]]:
    """<Series FREQ="A" GEO="DE"><Obs TIME_PERIOD="2000" OBS_VALUE="1.2"/></Series>; also SDMX 2.0 compact."""
    records: list[dict[str, str]] = []
    for elem in root.iter():
        name = _local(elem.tag)
        if name == "Series":
            series = dict(elem.attrib)
            for obs in elem:
                if _local(obs.tag) == "Obs":
                    records.append({**series, **dict(obs.attrib)})
        elif name == "Obs" and _local(elem.getparent().tag) != "Series":
            records.append(dict(elem.attrib))
    return [{_local(k): v for k, v in r.items()} for r in records]


def _records_to_rows(records: list[dict[str, str]]) -> list[list[str]]:
    columns: dict[str, None] = {}
    for rec in records:
        columns.update(dict.fromkeys(rec))
    # Put the measure last: dimensions on the left read as the table's stub
    header = [c for c in columns if c != "OBS_VALUE"] + (["OBS_VALUE"] if "OBS_VALUE" in columns else [])
    return [header] + [[rec.get(c, "") for c in header] for rec in records]


def _generic_xml(root) -> list[dict[str, str]]:
    """The element (by path) that repeats most and whose children are leaves: one record each."""
    counts: Counter[str] = Counter()
    paths: dict = {}
    for elem in root.iter():
        if not isinstance(elem.tag, str):
            continue
        parent = elem.getparent()
        path = _local(elem.tag)
        if parent is not None:
            path = paths.get(parent, "") + "/" + path
        paths[elem] = path  # keyed by element: lxml proxies are kept alive, ids are reused
        children = _elements(elem)
        if (children and all(not _elements(c) for c in children)) or (not children and elem.attrib):
            counts[path] += 1
    if not counts:
        return []
    best, n = counts.most_common(1)[0]
    if n < 2:
        return []
    records = []
    for elem in root.iter():
        if isinstance(elem.tag, str) and paths.get(elem) == best:
            rec = {_local(k): v for k, v in elem.attrib.items()}
            for child in _elements(elem):
                rec[_local(child.tag)] = "".join(child.itertext()).strip()
            records.append(rec)
    return records


def read_xml(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    """One sheet: the observations of an SDMX-ML data message (generic or structure-specific), or the most
    repeated record element of other XML, a header of field names over one row per record. Invalid XML,
    or XML without a repeated record, gives one ``ReadError``. Never raises for bad input."""
    try:
        root = _parse(data)
    except Exception as exc:  # lxml.etree.XMLSyntaxError and friends
        return ReadResult(errors=[ReadError("", f"invalid XML: {exc}", "xml")])
    root_name = _local(root.tag)
    if root_name in ("GenericData", "GenericTimeSeriesData"):
        records, fmt = _sdmx_generic(root), "sdmx-generic"
    elif root_name in ("StructureSpecificData", "StructureSpecificTimeSeriesData", "CompactData"):
        records, fmt = _sdmx_structure_specific(root), "sdmx-structure-specific"
    else:
        records, fmt = _generic_xml(root), "xml"
    if not records:
        return ReadResult(errors=[ReadError("", f"no repeated records in XML ({root_name})", fmt)])
    rows = trim(_records_to_rows(records[: limits.max_rows]), limits.max_rows + 1, limits.max_cols)
    return ReadResult(sheets=[Sheet(name=root_name, rows=rows, format=fmt)])

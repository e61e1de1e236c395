"""Any CRS in, the CRS where every reader looks out (spec 3.2, 3.3; docs/spec.md C16).

``encode(crs=...)`` accepts an EPSG code (``32631``, ``"EPSG:32631"``), a WKT2 (or WKT1) string, a
PROJJSON string or mapping, and CRS objects duck-typed by their methods: ``pyproj.CRS`` and
``rasterio.crs.CRS`` (``to_epsg()``, ``to_wkt()``, ``to_json()``); nothing here imports rasterio.

The rule (C16): ``chronozarr.crs`` is ``"EPSG:<n>"`` when the CRS has an EPSG code, else its WKT2
text (the form GDAL, PROJ, QGIS and rioxarray read). The level-0..n data arrays then carry, after
the zarr-conventions ``proj`` and GDAL's ``_CRS`` conventions:

- EPSG: ``proj:code`` and ``_CRS = {"url": ".../EPSG/0/<n>"}`` (as before);
- otherwise: ``proj:wkt2`` (the WKT2 text), ``proj:projjson`` when it can be had (given as
  PROJJSON, from the object, or converted by pyproj when installed), and ``_CRS = {"wkt": ...}``.

pyproj is optional: with it a WKT/PROJJSON string is checked (an ``EncodeError`` for a string PROJ
cannot parse) and a PROJJSON gets its WKT2; without it strings are stored as given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from chronozarr._optional import require
from chronozarr.errors import EncodeError

__all__ = ["CRSInfo", "crs_attributes", "crs_to_cf", "normalize_crs", "parse_crs"]

_EPSG = re.compile(r"^\s*EPSG:(\d+)\s*$", re.IGNORECASE)
#: The first keyword of a WKT1 or WKT2 CRS (ISO 19162, OGC 01-009).
_WKT = re.compile(
    r"^\s*(PROJCRS|PROJECTEDCRS|GEOGCRS|GEOGRAPHICCRS|GEODCRS|GEODETICCRS|BOUNDCRS|COMPOUNDCRS|"
    r"ENGCRS|ENGINEERINGCRS|VERTCRS|PROJCS|GEOGCS|GEOCCS|COMPD_CS|LOCAL_CS)\s*\[",
    re.IGNORECASE,
)
#: A WKT's own top-level identifier, the last ID/AUTHORITY of the string: ``ID["EPSG",32631]]``.
_WKT_EPSG = re.compile(r'(?:ID|AUTHORITY)\[\s*"EPSG"\s*,\s*"?(\d+)"?\s*\]\s*\]\s*$', re.IGNORECASE)


@dataclass(frozen=True)
class CRSInfo:
    """A CRS as stored: the ``chronozarr.crs`` text and what readers derive from it."""

    text: str
    epsg: int | None = None
    wkt2: str | None = None
    projjson: Mapping[str, Any] | None = None


def _pyproj() -> Any:
    try:  # lazy and optional: pyproj checks WKT/PROJJSON when installed (the 'xarray' extra)
        import pyproj
    except ImportError:  # not installed: strings are stored as given (module docstring)
        return None
    return pyproj


def _projjson_epsg(obj: Mapping[str, Any]) -> int | None:
    ident = obj.get("id")
    if isinstance(ident, Mapping) and str(ident.get("authority", "")).upper() == "EPSG":
        try:
            return int(ident["code"])
        except (KeyError, TypeError, ValueError):
            return None
    return None


def _from_projjson(obj: Mapping[str, Any]) -> CRSInfo:
    code = _projjson_epsg(obj)
    if code is not None:
        return CRSInfo(f"EPSG:{code}", epsg=code)
    pyproj = _pyproj()
    if pyproj is None:  # stored as given, compact; readers still find it under proj:projjson
        return CRSInfo(json.dumps(obj, separators=(",", ":")), projjson=dict(obj))
    try:
        wkt = pyproj.CRS.from_json_dict(dict(obj)).to_wkt()
    except Exception as exc:  # pyproj.exceptions.CRSError
        raise EncodeError("crs", f"PROJJSON that PROJ cannot read ({exc})") from exc
    return CRSInfo(wkt, wkt2=wkt, projjson=dict(obj))


def _from_wkt(text: str) -> CRSInfo:
    text = text.strip()
    pyproj = _pyproj()
    projjson = None
    if pyproj is not None:
        try:
            parsed = pyproj.CRS.from_wkt(text)
        except Exception as exc:  # pyproj.exceptions.CRSError
            raise EncodeError("crs", f"WKT that PROJ cannot read ({exc})") from exc
        projjson = parsed.to_json_dict()
    match = _WKT_EPSG.search(text)
    if match:  # the WKT names its own EPSG code: the code is the CRS (spec 3.9's form)
        code = int(match.group(1))
        return CRSInfo(f"EPSG:{code}", epsg=code)
    return CRSInfo(text, wkt2=text, projjson=projjson)


def _from_object(crs: Any) -> CRSInfo:
    try:
        code = crs.to_epsg()
    except Exception:  # an object whose to_epsg fails has no usable code
        code = None
    if code:
        return CRSInfo(f"EPSG:{int(code)}", epsg=int(code))
    wkt = None
    if hasattr(crs, "to_wkt"):
        try:
            wkt = crs.to_wkt(version="WKT2_2019")  # pyproj and rasterio both take this
        except TypeError:
            wkt = crs.to_wkt()
    projjson = None
    if hasattr(crs, "to_json_dict"):  # pyproj
        projjson = crs.to_json_dict()
    elif hasattr(crs, "to_json"):
        try:
            projjson = json.loads(crs.to_json())
        except (TypeError, ValueError):
            projjson = None
    if isinstance(wkt, str) and wkt.strip():
        return CRSInfo(wkt.strip(), wkt2=wkt.strip(), projjson=projjson)
    if isinstance(projjson, Mapping):
        return _from_projjson(projjson)
    raise EncodeError("crs", f"a CRS object without an EPSG code, WKT or PROJJSON: {crs!r}")


def normalize_crs(crs: Any) -> CRSInfo:
    """The stored form of any accepted CRS input (C16); ``EncodeError`` naming ``crs`` otherwise."""
    if isinstance(crs, bool) or crs is None:
        raise EncodeError(
            "crs", f"expected an EPSG code, WKT, PROJJSON or a CRS object, got {crs!r}"
        )
    if isinstance(crs, int | np.integer):
        code = int(crs)
        if code <= 0:
            raise EncodeError("crs", f"an EPSG code is a positive integer, got {code}")
        return CRSInfo(f"EPSG:{code}", epsg=code)
    if isinstance(crs, Mapping):
        return _from_projjson(crs)
    if isinstance(crs, str):
        text = str(crs).strip()
        if not text:
            raise EncodeError("crs", "an empty string is not a CRS")
        match = _EPSG.match(text)
        if match:
            return CRSInfo(f"EPSG:{int(match.group(1))}", epsg=int(match.group(1)))
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError as exc:
                raise EncodeError(
                    "crs", f"a string starting with '{{' is not PROJJSON ({exc})"
                ) from exc
            if not isinstance(obj, Mapping):
                raise EncodeError("crs", "PROJJSON must be a JSON object")
            return _from_projjson(obj)
        if _WKT.match(text):
            return _from_wkt(text)
        pyproj = _pyproj()
        if pyproj is not None:
            try:
                pyproj.CRS.from_user_input(text)
            except Exception as exc:  # pyproj.exceptions.CRSError
                raise EncodeError(
                    "crs", f"{text[:80]!r} is not a CRS PROJ can read ({exc})"
                ) from exc
        return CRSInfo(text)  # another authority string (ESRI:54009, a proj string): as given
    if hasattr(crs, "to_epsg") or hasattr(crs, "to_wkt"):
        return _from_object(crs)
    raise EncodeError("crs", f"expected an EPSG code, WKT, PROJJSON or a CRS object, got {crs!r}")


def parse_crs(text: str | None, attributes: Mapping[str, Any] | None = None) -> CRSInfo | None:
    """What a store's ``chronozarr.crs`` (and a data array's attributes) say: code, WKT2, PROJJSON."""
    if text is None:
        return None
    attributes = attributes or {}
    match = _EPSG.match(text)
    if match:
        return CRSInfo(f"EPSG:{int(match.group(1))}", epsg=int(match.group(1)))
    projjson = attributes.get("proj:projjson")
    wkt2 = attributes.get("proj:wkt2")
    if wkt2 is None and _WKT.match(text):
        wkt2 = text.strip()
    if projjson is None and text.strip().startswith("{"):
        try:
            projjson = json.loads(text)
        except ValueError:
            projjson = None
    return CRSInfo(
        text,
        wkt2=wkt2 if isinstance(wkt2, str) else None,
        projjson=projjson if isinstance(projjson, Mapping) else None,
    )


def crs_attributes(text: str | None) -> dict[str, Any]:
    """The CRS attributes of a level's data array (spec 3.3; C16 for a CRS without EPSG code)."""
    info = parse_crs(text)
    if info is None:
        return {}
    if info.epsg is not None:
        return {
            "proj:code": f"EPSG:{info.epsg}",
            "_CRS": {"url": f"http://www.opengis.net/def/crs/EPSG/0/{info.epsg}"},
        }
    out: dict[str, Any] = {}
    projjson = info.projjson
    if info.wkt2 is not None:
        out["proj:wkt2"] = info.wkt2
        pyproj = _pyproj()
        if projjson is None and pyproj is not None:
            try:
                projjson = pyproj.CRS.from_wkt(info.wkt2).to_json_dict()
            except Exception:  # stored WKT pyproj cannot read: keep what we have
                projjson = None
    if projjson is not None:
        out["proj:projjson"] = dict(projjson)
    if info.wkt2 is not None:
        out["_CRS"] = {"wkt": info.wkt2}
    elif projjson is not None:
        out["_CRS"] = {"projjson": dict(projjson)}
    return out


def crs_to_cf(text: str | None, transform: Sequence[float]) -> dict[str, Any]:
    """CF grid-mapping attributes (see ``_crs_to_cf``); a fresh dict per call."""
    return dict(_crs_to_cf(text, tuple(float(v) for v in transform)))


@lru_cache(maxsize=64)  # pyproj's CRS parse and to_cf take ~10 ms; a store opens many times
def _crs_to_cf(text: str | None, transform: tuple[float, ...]) -> dict[str, Any]:
    """CF grid-mapping attributes of a ``spatial_ref`` coordinate (CF 1.8 sec. 5.6, GDAL, rioxarray).

    ``crs_wkt`` and ``spatial_ref`` hold the WKT, ``GeoTransform`` GDAL's six numbers
    (c a b f d e: origin at the outer corner, spec 3.3), and pyproj's CF parameters.
    """
    a, b, c, d, e, f = (float(v) for v in transform)
    out: dict[str, Any] = {"GeoTransform": " ".join(repr(v) for v in (c, a, b, f, d, e))}
    if text is None:
        return out
    pyproj = require("pyproj", "xarray", "the spatial_ref of the xarray backend")
    try:
        crs = pyproj.CRS.from_user_input(text)
    except Exception:  # a stored CRS PROJ cannot read: the text alone, for the user to judge
        return {"crs_wkt": text, "spatial_ref": text, **out}
    cf: dict[str, Any] = dict(crs.to_cf())
    cf.update(out)
    cf["spatial_ref"] = cf["crs_wkt"]
    return cf

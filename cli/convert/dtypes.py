"""dtype rules of a conversion: the spec's four dtypes, or an explicit, recorded conversion.

The store keeps uint8, uint16, int16 or float32 (spec 2.3) and never converts on its own
(Invariant 3). A source in one of these is stored as is. Any other source dtype (float64, int32,
uint32, int8, ...) or a mix of dtypes needs ``--dtype``, and the rule applied is recorded in the
store's provenance (``dtype_conversion``):

- to a float type: ``round to nearest float32``; a finite value beyond float32's range is refused;
- to an integer type from an integer: ``exact``; a value outside the target's range is refused;
- to an integer from a float: ``round half to even``; a value outside the range is refused.

Whatever the dtype, pixels equal to the file's nodata (and NaN, which is not a valid nodata,
spec 2.3) are written as the store's nodata. A NaN pixel without a store nodata is refused.
A refusal names the file and the window, and happens while reading, before the store's root is
written (the conversion writes into a staging folder that is removed on failure).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cz.convert.errors import ConvertError

__all__ = ["SUPPORTED", "DtypeRule", "rule_for"]

SUPPORTED = ("uint8", "uint16", "int16", "float32")  # spec 2.3


@dataclass(frozen=True)
class DtypeRule:
    """How values of ``source`` dtype become values of the store's ``target`` dtype."""

    source: str
    target: str

    @property
    def converts(self) -> bool:
        return self.source != self.target

    @property
    def text(self) -> str:
        """The rule in words, as recorded in the provenance."""
        if not self.converts:
            return "none"
        src, dst = np.dtype(self.source), np.dtype(self.target)
        if dst.kind == "f":
            how = "round to nearest float32; finite values beyond its range refused"
        elif src.kind == "f":
            how = f"round half to even; values outside [{_lo(dst)}, {_hi(dst)}] refused"
        else:
            how = f"exact; values outside [{_lo(dst)}, {_hi(dst)}] refused"
        return f"{self.source} -> {self.target}: {how}"

    def apply(
        self,
        block: np.ndarray,
        src_nodata: float | None,
        dst_nodata: float | int | None,
        where: str,
    ) -> np.ndarray:
        """``block`` in the target dtype, nodata (and NaN) replaced by ``dst_nodata``."""
        invalid = np.zeros(block.shape, dtype=bool)
        if src_nodata is not None and not np.isnan(src_nodata):
            invalid |= block == src_nodata
        if block.dtype.kind == "f":
            nan = np.isnan(block)
            if nan.any() and dst_nodata is None:
                raise ConvertError(
                    where,
                    "holds NaN pixels, which are not a valid nodata (spec 2.3); give --nodata V "
                    "to store them as V",
                )
            invalid |= nan
        valid = ~invalid
        dst = np.dtype(self.target)
        if not self.converts:
            out = block.copy() if invalid.any() else block
        elif dst.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                out = block.astype(dst)
            bad = valid & ~np.isfinite(out) & np.isfinite(block)
            if bad.any():
                raise ConvertError(where, f"value {block[bad][0]!r} does not fit float32")
        else:
            values = np.rint(block) if block.dtype.kind == "f" else block
            vv = values[valid]
            if vv.size:
                lo, hi = vv.min(), vv.max()
                if (
                    lo < _lo(dst)
                    or hi > _hi(dst)
                    or (block.dtype.kind == "f" and not np.isfinite(vv).all())
                ):
                    bad_value = lo if lo < _lo(dst) else hi
                    raise ConvertError(
                        where, f"value {bad_value!r} does not fit {self.target} ({self.text})"
                    )
            with np.errstate(invalid="ignore"):
                out = np.where(valid, values, 0).astype(dst)
        if invalid.any() and dst_nodata is not None:
            out[invalid] = dst_nodata
        return out


def _lo(dtype: np.dtype) -> int:
    return int(np.iinfo(dtype).min)


def _hi(dtype: np.dtype) -> int:
    return int(np.iinfo(dtype).max)


def rule_for(source: str, requested: str | None, where: str) -> DtypeRule:
    """The rule for a file of dtype ``source``: kept if supported, else ``--dtype`` is required."""
    if requested is not None:
        if requested not in SUPPORTED:
            raise ConvertError("--dtype", f"expected one of {list(SUPPORTED)}, got {requested!r}")
        if np.dtype(source).kind not in "uif":
            raise ConvertError(where, f"dtype {source} cannot be converted to numbers")
        return DtypeRule(source, requested)
    if source not in SUPPORTED:
        hint = "float32" if np.dtype(source).kind == "f" else "one that holds its values"
        raise ConvertError(
            where,
            f"dtype {source} is not one the spec stores ({', '.join(SUPPORTED)}); convert it "
            f"explicitly with --dtype ({hint}), the rule is recorded in the provenance",
        )
    return DtypeRule(source, source)

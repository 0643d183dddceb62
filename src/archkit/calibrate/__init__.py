"""Calibration: measured service times from a live Triton (sweep) folded into a spec (apply)."""

from archkit.calibrate.apply import CalibrationError, with_calibration

__all__ = ["CalibrationError", "with_calibration"]

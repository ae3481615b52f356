"""Making and adapting models from measurements: the default models' recipe and calibration to this machine."""
# SPDX-License-Identifier: BSD-3-Clause

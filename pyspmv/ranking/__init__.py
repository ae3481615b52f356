"""Models as the core evaluates them: plain arrays (portable), model files, C headers, the shipped defaults and rank()."""
# SPDX-License-Identifier: BSD-3-Clause

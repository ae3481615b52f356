"""Matrices in, formats out: the input checks (Matrix, Matrix Market), generated matrices, storage formats, features and the configurations the C registry defines. The lowest Python layer."""
# SPDX-License-Identifier: BSD-3-Clause

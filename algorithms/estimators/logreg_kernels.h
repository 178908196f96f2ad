// The dense block kernels of logistic regression (logreg.cc): the two products of a row block, scores
// Z = X Wt^T and gradient Gt += R^T X, with the weights class-major (Wt: m x d) so both run along the rows of X with
// full-width vectors whatever m is (10 classes or 1). An AVX2+FMA version is chosen at run time where the CPU has it
// (the build targets baseline x86-64); the portable loops are the reference and the fallback. Thread-safe (pure
// functions of their arguments).
#pragma once

#include <cstdint>
#include <vector>

namespace geomx::algorithms::logreg_kernels {

// z[r*m + c] = x_r . wt_c for the nb rows of x (row stride d).
void DenseScores(const float* x, int64_t nb, int64_t d, const float* wt, int64_t m, float* z);
// gt[c*d + j] += sum_r res[r*m + c] * x_r[j].
void DenseGradAdd(const float* x, int64_t nb, int64_t d, const float* res, int64_t m, float* gt);
// wt (m x d) from w (d x m).
void ClassMajor(const float* w, int64_t d, int64_t m, std::vector<float>* wt);
// Test seam: true forces the portable kernels, so tests on an AVX2 machine cover them too.
void UsePortableKernels(bool portable);

}  // namespace geomx::algorithms::logreg_kernels

// Package itemitem trains item-item recommenders in closed form: EASE
// (Steck 2019, "Embarrassingly Shallow Autoencoders for Sparse Data",
// WWW '19), saved as an item-item model of package models (the model file
// holds the weights and every user's training items, and predict,
// recommend, similar, eval and export serve it like any other model).
//
// # The model
//
// X is the users x items binary matrix of the training log (x_ui = 1 when
// user u has any event on item i). EASE learns an items x items weight
// matrix B and scores item j for user u as
//
//	s_uj = (x_u B)_j = sum over the items i of u's history of B_ij.
//
// B solves the ridge regression of X on itself with the trivial solution
// (B = I) ruled out by a zero diagonal:
//
//	min_B  ||X - X B||_F^2 + lambda ||B||_F^2   subject to  diag(B) = 0.
//
// # The closed form
//
// With the Lagrangian ||X - XB||_F^2 + lambda ||B||_F^2 + 2 gamma^T diag(B)
// (one multiplier gamma_j per diagonal entry), setting the gradient in B to
// zero gives
//
//	(X^T X + lambda I) B = X^T X - diag(gamma)
//	B = I - P diag(gamma + lambda 1),   P = (X^T X + lambda I)^-1,
//
// using X^T X = (X^T X + lambda I) - lambda I. The constraint fixes gamma:
// 0 = B_jj = 1 - P_jj (gamma_j + lambda), so gamma_j + lambda = 1 / P_jj and
//
//	B = I - P diag(1 / diag(P)),   i.e.  B_ij = -P_ij / P_jj (i != j),  B_jj = 0.
//
// Column by column this is the ridge regression of item j's column of X on
// all the other columns (the objective separates over the columns of B,
// and B_jj = 0 removes column j from its own regressors); TestClosedForm
// checks the formula against that direct solve. G = X^T X is the item
// co-occurrence (Gram) matrix: G_ij counts the users who have both i and
// j, G_jj the users of item j. The work is one Cholesky factorisation and
// inversion of the items x items matrix G + lambda I (gonum's LAPACK:
// Potrf, Potri), about n^3 floating-point operations for n items, and 8
// n^2 bytes held in place (G becomes P becomes B).
//
// # Catalogue and memory
//
// The closed form is dense in the items. Settings.MaxItems bounds it
// (DefaultMaxItems): a log with more items fits B over its MaxItems items
// with the most training users (ties by lower index), and every other item
// has no weights (score 0; such items are rarely anyone's top-N anyway).
// Estimate gives the memory of a fit; Train refuses (a *TooLargeError
// with the figure and what to lower) a fit above Settings.MaxMemory
// before allocating anything of that size.
//
// # Choosing lambda
//
// Without Settings.Lambda, Train chooses lambda on a validation part
// carved from the training log only (never from a test file): for up to
// Settings.ValidationUsers users with at least two items (drawn with a
// seeded generator), a fraction Settings.ValidationFraction (at least one
// item, at least one left) of their distinct items is held out; B is fitted
// on the rest of the log for every lambda of the grid, and each held-out
// user's top 10 (their remaining training items left out, as recommend
// does) is scored by NDCG@10 against their held-out items. The grid
// follows the scale of the log, as the literature's values do (Steck's
// lambda of 500 on ML-20M, 1000 on Netflix and 200 on MSD are 0.3 to 1
// times the mean number of users per item): lambda = c 10^k for k = -2 ..
// 2, c the mean of diag(G) over the fitted items, then the best point's
// neighbours at half a decade. The best validation lambda is refitted on
// the whole log. Result.Grid holds every point with its NDCG@10, beside
// the validation NDCG@10 of most-popular.
package itemitem

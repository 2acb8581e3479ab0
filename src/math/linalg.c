/*-------------------------------------------------------------------------
 *
 * linalg.c
 *	  Dense linear algebra on packed symmetric matrices, over OpenBLAS and
 *	  LAPACKE.
 *
 * Symmetric p x p matrices (H, K') are stored as their lower triangle in
 * LAPACK's column-major packed layout: element (i, j), i >= j, lives at
 * j*p - j*(j-1)/2 + (i - j).  Every product, factorisation and solve goes
 * through BLAS/LAPACK; the Cholesky update and down-date, which LAPACK
 * does not offer, are in cholesky_modify.c.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <float.h>
#include <math.h>

#include <cblas.h>
#include <lapacke.h>

static int	blas_threads = 1;

/*
 * OpenBLAS threads pay off for the O(n p^2) products of training, not for
 * the O(p^2) level-1/2 work of a removal, where they only spin and yield.
 * So removals run single-threaded and training asks for all threads.
 */
void
linalg_init(void)
{
	blas_threads = openblas_get_num_threads();
	openblas_set_num_threads(1);
}

/* the threads training and re-anchoring use */
int
linalg_threads(void)
{
	return blas_threads;
}

/* use all threads (on) or one; returns whether all were in use before */
bool
linalg_parallel(bool on)
{
	bool		was = openblas_get_num_threads() > 1;

	openblas_set_num_threads(on ? blas_threads : 1);
	return was;
}

/*
 * In-place Cholesky factorisation A = L L' of a packed lower matrix.
 * Returns false when A is not positive definite.
 */
bool
chol_factor_packed(double *ap, int p)
{
	lapack_int	info = LAPACKE_dpptrf(LAPACK_COL_MAJOR, 'L', p, ap);

	if (info < 0)
		elog(ERROR, "LAPACKE_dpptrf: illegal argument %d", (int) -info);
	return info == 0;
}

/*
 * Vector operands of level-2 calls are copied to BLAS_ALIGN-aligned
 * scratch first (see unlearn.h); packed matrices are aligned by their
 * allocator (state_cache.c).  The copy is O(p) beside the O(p^2) call.
 */
static double *
aligned_copy(const double *v, int n, void **base)
{
	double	   *a;

	*base = palloc(sizeof(double) * Max(n, 1) + BLAS_ALIGN);
	a = (double *) TYPEALIGN(BLAS_ALIGN, *base);
	if (v != NULL)
		memcpy(a, v, sizeof(double) * n);
	return a;
}

/* Solve L L' v = rhs in place, O(p^2). */
void
chol_solve_packed(const double *lp, int p, double *rhs)
{
	void	   *base;
	double	   *a = aligned_copy(rhs, p, &base);
	lapack_int	info = LAPACKE_dpptrs(LAPACK_COL_MAJOR, 'L', p, 1, lp, a, p);

	if (info != 0)
		elog(ERROR, "LAPACKE_dpptrs failed: %d", (int) info);
	memcpy(rhs, a, sizeof(double) * p);
	pfree(base);
}

/* v <- L' v for a packed lower triangular L, O(p^2). */
void
packed_lower_transpose_product(const double *lp, int p, double *v)
{
	void	   *base;
	double	   *a = aligned_copy(v, p, &base);

	cblas_dtpmv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, p, lp, a, 1);
	memcpy(v, a, sizeof(double) * p);
	pfree(base);
}

/* v <- L'^-1 v for a packed lower triangular L, O(p^2). */
void
packed_lower_transpose_solve(const double *lp, int p, double *v)
{
	void	   *base;
	double	   *a = aligned_copy(v, p, &base);

	cblas_dtpsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, p, lp, a, 1);
	memcpy(v, a, sizeof(double) * p);
	pfree(base);
}

/* Pack the lower triangle of a column-major full matrix. */
void
packed_from_full(const double *full, int p, double *packed)
{
	lapack_int	info = LAPACKE_dtrttp(LAPACK_COL_MAJOR, 'L', p, full, p, packed);

	if (info != 0)
		elog(ERROR, "LAPACKE_dtrttp failed: %d", (int) info);
}

/* Unpack into the lower triangle of a column-major full matrix. */
void
full_from_packed(const double *packed, int p, double *full)
{
	lapack_int	info = LAPACKE_dtpttr(LAPACK_COL_MAJOR, 'L', p, packed, full, p);

	if (info != 0)
		elog(ERROR, "LAPACKE_dtpttr failed: %d", (int) info);
}

/* av = A v and returns v' A v, for packed symmetric A. */
double
packed_quadratic(const double *ap, int p, const double *v, double *av)
{
	void	   *vbase,
			   *avbase;
	double	   *va = aligned_copy(v, p, &vbase);
	double	   *ava = aligned_copy(NULL, p, &avbase);
	double		q;

	cblas_dspmv(CblasColMajor, CblasLower, p, 1.0, ap, va, 1, 0.0, ava, 1);
	q = vec_dot(va, ava, p);
	memcpy(av, ava, sizeof(double) * p);
	pfree(vbase);
	pfree(avbase);
	return q;
}

/*
 * An upper bound on lambda_max of a packed PSD matrix: LAPACK's largest
 * eigenvalue plus a margin that covers its backward error (p eps ||A||_F),
 * never more than the Frobenius norm, which bounds it rigorously.
 */
double
packed_max_eigenvalue_bound(const double *ap, int p)
{
	Size		len = PACKED_SIZE(p);
	double	   *work = palloc(sizeof(double) * len);
	double	   *eig = palloc(sizeof(double) * p);
	lapack_int	found = 0;
	lapack_int *ifail = palloc(sizeof(lapack_int) * p);
	double		frob2 = 0.0;
	double		top;
	lapack_int	info;
	Size		i;
	int			j;

	/* Frobenius norm: off-diagonal entries count twice */
	for (j = 0; j < p; j++)
	{
		const double *col = ap + packed_column(p, j);

		frob2 += col[0] * col[0];
		for (i = 1; i < (Size) (p - j); i++)
			frob2 += 2.0 * col[i] * col[i];
	}

	memcpy(work, ap, sizeof(double) * len);
	info = LAPACKE_dspevx(LAPACK_COL_MAJOR, 'N', 'I', 'L', p, work, 0.0, 0.0,
						  p, p, 0.0, &found, eig, NULL, 1, ifail);
	if (info != 0 || found != 1)
		top = sqrt(frob2);
	else
		top = Min(eig[0] + 4.0 * p * DBL_EPSILON * sqrt(frob2) + 1e-12,
				  sqrt(frob2));
	pfree(work);
	pfree(eig);
	pfree(ifail);
	return top;
}

/*
 * x'y summed in a fixed order, whatever the operands' alignment (see
 * BLAS_ALIGN): removal and prediction use it instead of DDOT.
 */
double
vec_dot(const double *x, const double *y, int n)
{
	double		acc[4] = {0.0, 0.0, 0.0, 0.0};
	int			i;

	for (i = 0; i + 4 <= n; i += 4)
	{
		acc[0] += x[i] * y[i];
		acc[1] += x[i + 1] * y[i + 1];
		acc[2] += x[i + 2] * y[i + 2];
		acc[3] += x[i + 3] * y[i + 3];
	}
	for (; i < n; i++)
		acc[i & 3] += x[i] * y[i];
	return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

double
vec_norm(const double *v, int p)
{
	return cblas_dnrm2(p, v, 1);
}

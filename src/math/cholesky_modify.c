/*-------------------------------------------------------------------------
 *
 * cholesky_modify.c
 *	  Rank-one and rank-k modifications of a packed Cholesky factor:
 *	  L L' +- sum_r c_r x_r x_r', O(k p^2), no refactorisation.
 *
 * LAPACK has no Cholesky update or down-date, so the sweeps are ours.
 *
 * Update (an inserted row): Givens rotations, whose inner loops are BLAS
 * level-1 calls.
 *
 * Down-date (removed rows): hyperbolic rotations in the "mixed" form of
 * Bojanczyk, Brent, Van Dooren and de Hoog (SIAM J. Sci. Stat. Comput. 8,
 * 1987), which is forward stable where the textbook form
 * [l'; z'] = (1/c) [1 -s; -s 1] [l; z] is not.  Row r's rotation at the
 * pivot l_r of column j (l_0 the pivot before the down-date):
 *
 *	  l_r+1 = sqrt(l_r^2 - z_r[j]^2),  c_r = l_r+1 / l_r,  s_r = z_r[j] / l_r
 *	  t_r = (t_r-1 - s_r z_r[i]) / c_r,  z_r[i]' = c_r z_r[i] - s_r t_r	(i > j)
 *
 * with t_-1 = l_ij, and l_ij' = t_k-1 after the k rows.  We run it scaled:
 * the product of the 1/c_r telescopes to Q_r = l_0 / l_r+1, so with
 * u_r = t_r / Q_r
 *
 *	  u_r = u_r-1 - a_r z_r[i],	 a_r = s_r / Q_r-1 = z_r[j] / l_0
 *	  z_r[i]' = c_r z_r[i] - b_r u_r,	 b_r = s_r Q_r
 *	  l_ij' = Q_k-1 u_k-1
 *
 * the same recurrence (z' still from the new t), with one rounding fewer
 * per step and three flops per element instead of four.  On test problems
 * (bench/downdate_forms.py: large down-dates, and down-dated matrices of
 * condition up to 1e11), its backward error ||L L' - H||/||H|| was within
 * a few per cent of the unscaled form's, or smaller; the textbook form's
 * was up to ten times larger.
 *
 * BLAS's DROTM applies only the textbook form, and as four level-1 calls
 * per column the mixed form read and wrote each column of L four times
 * for every removed row: a 100-row DELETE spent two thirds of its time
 * there.  So the down-date is one fused kernel, blocked for the cache:
 *
 *	- Element (i, j) of L must meet row r's rotation after rows < r did,
 *	  and z_r[i] must meet column j's rotation after columns < j did.  Any
 *	  order that keeps both gives the same result as k rank-one down-dates.
 *	- We go down L in chunks of CHUNK rows ("left-looking").  A chunk's z
 *	  entries of all k rows (k x CHUNK doubles) stay in L1; every column
 *	  left of the chunk passes through them once, each CHUNK-long piece of
 *	  L loaded and stored once for all k rows.  The rotations of a column
 *	  are fixed when the sweep reaches its diagonal, in the chunk's
 *	  triangle, and kept for the chunks below.
 *	- Rows go through in groups of at most ROW_GROUP, which caps the rotations
 *	  kept at ROW_GROUP x p and is again the same order.
 *
 * Cost: k p^2 / 2 element rotations, 3 flops each, and k p square roots;
 * memory O(ROW_GROUP p).
 *
 * Many rows at once (an async model's apply of a whole queue) are cheaper
 * refactored: chol_refactor_modify rebuilds L L', adds and removes the
 * rows' products with two DSYRK calls and factors again with DPOTRF, in
 * level-3 BLAS: (4/3) p^3 + (k_added + k_removed) p^2 flops against the
 * sweeps' (3/2) k p^2 at level-1 and level-2 speed.  Its backward error
 * relative to ||L L'|| is of the same order as the mixed down-date's: the
 * product and the sums are formed to O(eps) relative to their norms, and
 * DPOTRF is backward stable.  The kernel is written with GCC vector extensions;
 * with GCC on x86-64 it is also built for AVX2 and AVX-512 and picked at
 * load time (function multi-versioning), like OpenBLAS's own kernels.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <math.h>

#include <cblas.h>
#include <lapacke.h>

/*
 * Rows of L per chunk, and removed rows per group (see the header): the
 * chunk's z entries, ROW_GROUP x CHUNK doubles (16 kB), stay in L1.  Tuned
 * on Fashion-MNIST (p = 785) with 100-row statements.
 */
#define CHUNK 32
#define ROW_GROUP 64

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#define CACHE_LINE 64

/* rows per DSYRK of chol_refactor_modify: a scaled copy of 8 p REFACTOR_CHUNK bytes */
#define REFACTOR_CHUNK 1024

/* eight doubles: one AVX-512 register, two AVX2 ones, four SSE2 ones */
#define VECTOR_LANES 8
#define CHUNK_VECTORS (CHUNK / VECTOR_LANES)
typedef double DoubleVector __attribute__((vector_size(VECTOR_LANES * sizeof(double))));

/* one row's rotation of one column, in the scaled form (see the header) */
typedef struct HyperbolicRotation
{
	double		a;				/* u <- u - a z */
	double		b;				/* z <- c z - b u */
	double		c;
} HyperbolicRotation;

/*
 * L L' <- L L' + weight * x x', O(p^2).  The classic rotation sweep; x is
 * copied, not modified.
 */
void
chol_rank1_update(double *lp, int p, const double *x, double weight)
{
	double	   *z = palloc(sizeof(double) * p);
	double		root = sqrt(weight);
	int			k;

	for (k = 0; k < p; k++)
		z[k] = x[k] * root;

	for (k = 0; k < p; k++)
	{
		double	   *col = lp + packed_column(p, k);
		double		lkk = col[0];
		double		r = hypot(lkk, z[k]);
		double		c = r / lkk;
		double		s = z[k] / lkk;
		int			rest = p - k - 1;

		col[0] = r;
		if (rest > 0 && z[k] != 0.0)
		{
			cblas_daxpy(rest, s, z + k + 1, 1, col + 1, 1);
			cblas_dscal(rest, 1.0 / c, col + 1, 1);
			cblas_dscal(rest, c, z + k + 1, 1);
			cblas_daxpy(rest, -s, col + 1, 1, z + k + 1, 1);
		}
	}
	pfree(z);
}

/*
 * Apply the k rotations rot[0..k) of one column, in order, to vectors
 * [first, CHUNK_VECTORS) of a CHUNK of that column (l) and of the chunk's z
 * entries of the k rows (z, k x CHUNK).  The loop every down-dated element
 * goes through.  Those values of l stay in vector registers while the k
 * rows pass (GCC vector extensions, lowered to whatever the clone's
 * instruction set has); "first" is a constant wherever this is inlined.
 */
static inline __attribute__((always_inline)) void
rotate_vectors(double *restrict l, double *restrict z, const HyperbolicRotation *restrict rot,
			   int k, double scale, const int first)
{
	DoubleVector lc[CHUNK_VECTORS];
	int			r,
				v;

#pragma GCC unroll 8
	for (v = first; v < CHUNK_VECTORS; v++)
		memcpy(&lc[v], l + v * VECTOR_LANES, sizeof(DoubleVector));
	for (r = 0; r < k; r++)
	{
		double		a = rot[r].a;
		double		b = rot[r].b;
		double		c = rot[r].c;
		double	   *zr = z + (Size) r * CHUNK;

#pragma GCC unroll 8
		for (v = first; v < CHUNK_VECTORS; v++)
		{
			DoubleVector zv;

			/* u first, then z from the new u: the mixed form, scaled */
			memcpy(&zv, zr + v * VECTOR_LANES, sizeof(DoubleVector));
			lc[v] = lc[v] - a * zv;
			zv = c * zv - b * lc[v];
			memcpy(zr + v * VECTOR_LANES, &zv, sizeof(DoubleVector));
		}
	}
#pragma GCC unroll 8
	for (v = first; v < CHUNK_VECTORS; v++)
	{
		lc[v] = lc[v] * scale;
		memcpy(l + v * VECTOR_LANES, &lc[v], sizeof(DoubleVector));
	}
}

/*
 * rotate_vectors over vectors [first, CHUNK_VECTORS): the bulk passes
 * first = 0, a column of the chunk's triangle skips the vectors above its
 * diagonal.
 */
VECTOR_CLONES
static void
rotate_chunk(double *restrict l, double *restrict z, const HyperbolicRotation *restrict rot,
			 int k, double scale, int first)
{
	StaticAssertStmt(CHUNK_VECTORS <= 8, "rotate_chunk spells out eight cases");
	/* one case per constant, so that each inlined copy keeps lc in registers */
#define ROTATE_FROM(n) case n: rotate_vectors(l, z, rot, k, scale, n); break
	switch (first)
	{
			ROTATE_FROM(0);
			ROTATE_FROM(1);
			ROTATE_FROM(2);
			ROTATE_FROM(3);
			ROTATE_FROM(4);
			ROTATE_FROM(5);
			ROTATE_FROM(6);
			ROTATE_FROM(7);
		default:
			break;
	}
#undef ROTATE_FROM
}

/*
 * The k rotations of column j at its pivot *pivot, from z_r[j] (zj[r *
 * CHUNK]), in the scaled form of the header; sets the pivot to l_k and
 * *scale to Q = l_0 / l_k.  False when L L' - z z' would not be positive
 * definite.
 *
 * The pivots form a chain, l_r+1^2 = l_r^2 - z_r^2.  We carry the square
 * (one FMA, a single rounding, like (l - z)(l + z)) so that the square
 * roots and the division of each rotation are off the chain.
 */
static bool
make_column_rotations(double *pivot, const double *zj, int k, HyperbolicRotation *rot,
					  double *scale)
{
	double		first = *pivot;
	double		inv_first = 1.0 / first;
	double		square = first * first;
	double		root = first;
	double		inv_root = inv_first;
	bool		moved = false;
	int			r;

	for (r = 0; r < k; r++)
	{
		double		z = zj[(Size) r * CHUNK];
		double		next_square,
					next_root,
					next_inv;

		if (z == 0.0)
		{
			/* the identity, exactly: u - 0 z = u and 1 z - 0 u = z */
			rot[r].a = 0.0;
			rot[r].b = 0.0;
			rot[r].c = 1.0;
			continue;
		}
		next_square = fma(-z, z, square);
		if (!(next_square > 0.0))
			return false;
		next_root = sqrt(next_square);
		next_inv = 1.0 / next_root;
		rot[r].a = z * inv_first;	/* s_r / Q_r-1 */
		rot[r].b = (z * inv_root) * (first * next_inv); /* s_r Q_r */
		rot[r].c = next_root * inv_root;
		square = next_square;
		root = next_root;
		inv_root = next_inv;
		moved = true;
	}
	*pivot = root;
	*scale = moved ? first * inv_root : 1.0;
	return true;
}

/*
 * One group of k <= ROW_GROUP rows: z_r = roots[r] x_r, x row-major k x p.
 * Each chunk gathers (and scales) its own z entries; nothing else of z is
 * ever held.
 */
static bool
downdate_group(double *lp, int p, const double *x, const double *roots, int k,
			   HyperbolicRotation *rots, double *scales, double *zchunk)
{
	double		lbuf[CHUNK];
	int			i0;

	for (i0 = 0; i0 < p; i0 += CHUNK)
	{
		int			rows = Min(CHUNK, p - i0);
		int			r,
					j,
					e;

		/* this chunk's z entries, zero-padded to CHUNK */
		for (r = 0; r < k; r++)
		{
			double	   *zc = zchunk + (Size) r * CHUNK;
			const double *xr = x + (Size) r * p + i0;

			for (e = 0; e < rows; e++)
				zc[e] = xr[e] * roots[r];
			for (e = rows; e < CHUNK; e++)
				zc[e] = 0.0;
		}

		/* every column left of the chunk: its k rotations are known */
		for (j = 0; j < i0; j++)
		{
			double	   *piece = lp + packed_column(p, j) + (i0 - j);

			/* the next column's piece is one column away: fetch it now */
			if (j + 1 < i0)
			{
				const char *next = (const char *) (lp + packed_column(p, j + 1) + (i0 - j - 1));
				int			line;

				for (line = 0; line <= (int) (sizeof(double) * CHUNK); line += CACHE_LINE)
					__builtin_prefetch(next + line, 1);
			}
			if (rows == CHUNK)
				rotate_chunk(piece, zchunk, rots + (Size) j * k, k, scales[j], 0);
			else
			{
				/* padded lanes stay zero: (0 - a 0) Q = 0, c 0 - b 0 = 0 */
				memcpy(lbuf, piece, sizeof(double) * rows);
				for (e = rows; e < CHUNK; e++)
					lbuf[e] = 0.0;
				rotate_chunk(lbuf, zchunk, rots + (Size) j * k, k, scales[j], 0);
				memcpy(piece, lbuf, sizeof(double) * rows);
			}
		}

		/*
		 * The chunk's own triangle, column by column: fix the column's k
		 * rotations at its pivot, then rotate the rows below it like a bulk
		 * column, skipping the vectors wholly above them.  The lane of row j
		 * is spent once its rotations are made (z_r[j] feeds no later
		 * column) and is zeroed, so that the lanes at and above the
		 * diagonal stay zero in lbuf, as padded lanes do.
		 */
		for (j = i0; j < i0 + rows; j++)
		{
			double	   *col = lp + packed_column(p, j);
			HyperbolicRotation *rot = rots + (Size) j * k;
			int			lane = j - i0;
			int			below = rows - lane - 1;

			if (!make_column_rotations(&col[0], zchunk + lane, k, rot, &scales[j]))
				return false;
			for (r = 0; r < k; r++)
				zchunk[(Size) r * CHUNK + lane] = 0.0;
			if (below > 0)
			{
				memset(lbuf, 0, sizeof(lbuf));
				memcpy(lbuf + lane + 1, col + 1, sizeof(double) * below);
				rotate_chunk(lbuf, zchunk, rot, k, scales[j], (lane + 1) / VECTOR_LANES);
				memcpy(col + 1, lbuf + lane + 1, sizeof(double) * below);
			}
		}
	}
	return true;
}

/*
 * L L' <- L L' - sum_r weights[r] x_r x_r' over k rows (x row-major k x p,
 * not modified), O(k p^2).  Returns false (leaving L partly modified) when
 * the result would not be positive definite; callers treat that as a
 * numerical failure and retrain.
 */
bool
chol_rankk_downdate(double *lp, int p, const double *x, const double *weights, int k)
{
	/* as few groups as ROW_GROUP allows, of equal size */
	int			ngroups = (k + ROW_GROUP - 1) / ROW_GROUP;
	int			group = (k + ngroups - 1) / ngroups;
	double	   *roots = palloc(sizeof(double) * group);
	HyperbolicRotation *rots = palloc(sizeof(HyperbolicRotation) * group * p);
	double	   *scales = palloc(sizeof(double) * p);
	double	   *zchunk = palloc(sizeof(double) * group * CHUNK);
	bool		ok = true;
	int			g;

	for (g = 0; g < k && ok; g += group)
	{
		int			rows = Min(group, k - g);
		int			r;

		for (r = 0; r < rows; r++)
			roots[r] = sqrt(weights[g + r]);
		ok = downdate_group(lp, p, x + (Size) g * p, roots, rows, rots, scales, zchunk);
	}
	pfree(roots);
	pfree(rots);
	pfree(scales);
	pfree(zchunk);
	return ok;
}

/*
 * L L' + sum_i ca[i] xa_i xa_i' - sum_i cr[i] xr_i xr_i' factored again
 * into lp (packed lower), for weights ca, cr >= 0 and rows x_i of p
 * doubles: see the header.  Returns false, lp unchanged, if the result is
 * not positive definite.  O(p^3 + (na + nr) p^2) time, O(p^2) memory.
 */
bool
chol_refactor_modify(double *lp, int p, const double *xa, const double *ca, int na,
					 const double *xr, const double *cr, int nr)
{
	double	   *l = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
	double	   *h = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
	double	   *y = MemoryContextAllocHuge(CurrentMemoryContext,
										   sizeof(double) * p * Max(Min(Max(na, nr), REFACTOR_CHUNK), 1));
	int			pass;
	lapack_int	info;

	memset(l, 0, sizeof(double) * p * p);
	full_from_packed(lp, p, l);
	cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, p, 1.0, l, p, 0.0, h, p);
	for (pass = 0; pass < 2; pass++)
	{
		const double *x = pass == 0 ? xa : xr;
		const double *c = pass == 0 ? ca : cr;
		int			n = pass == 0 ? na : nr;
		int			from,
					i,
					j;

		/* the rows' products in chunks: the scaled copy stays small */
		for (from = 0; from < n; from += REFACTOR_CHUNK)
		{
			int			rows = Min(REFACTOR_CHUNK, n - from);

			for (i = 0; i < rows; i++)
			{
				double		s = sqrt(c[from + i]);

				for (j = 0; j < p; j++)
					y[(Size) i * p + j] = s * x[(Size) (from + i) * p + j];
			}
			cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, rows, pass == 0 ? 1.0 : -1.0,
						y, p, 1.0, h, p);
		}
	}
	info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', p, h, p);
	if (info == 0)
		packed_from_full(h, p, lp);
	pfree(l);
	pfree(h);
	pfree(y);
	return info == 0;
}

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
 * [l'; z'] = (1/c) [1 -s; -s 1] [l; z] is not.  For the pivot l_jj and
 * z_j of column j:
 *
 *	  r = sqrt((l_jj - z_j)(l_jj + z_j)),  c = r / l_jj,  s = z_j / l_jj
 *	  l_ij' = (l_ij - s z_i) / c,		 z_i' = c z_i - s l_ij'	  (i > j)
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
 * Cost: k p^2 / 2 element rotations, 3 flops each; memory O(ROW_GROUP p).
 * The kernel's loop has a fixed trip count, so the compiler vectorises it;
 * with GCC on x86-64 it is also built for AVX2 and AVX-512 and picked at
 * load time (function multi-versioning), like OpenBLAS's own kernels.
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include <math.h>

#include <cblas.h>

/* rows of L per chunk, and removed rows per group (see the header) */
#define CHUNK 64
#define ROW_GROUP 40

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* eight doubles: one AVX-512 register, two AVX2 ones, four SSE2 ones */
#define VECTOR_LANES 8
#define CHUNK_VECTORS (CHUNK / VECTOR_LANES)
typedef double DoubleVector __attribute__((vector_size(VECTOR_LANES * sizeof(double))));

typedef struct HyperbolicRotation
{
	double		s;
	double		c;
	double		inv_c;
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
			   int k, const int first)
{
	DoubleVector lc[CHUNK_VECTORS];
	int			r,
				v;

#pragma GCC unroll 8
	for (v = first; v < CHUNK_VECTORS; v++)
		memcpy(&lc[v], l + v * VECTOR_LANES, sizeof(DoubleVector));
	for (r = 0; r < k; r++)
	{
		double		s = rot[r].s;
		double		c = rot[r].c;
		double		inv_c = rot[r].inv_c;
		double	   *zr = z + (Size) r * CHUNK;

#pragma GCC unroll 8
		for (v = first; v < CHUNK_VECTORS; v++)
		{
			DoubleVector zv,
						t;

			/* the mixed form of the header: l' first, then z' from l' */
			memcpy(&zv, zr + v * VECTOR_LANES, sizeof(DoubleVector));
			t = (lc[v] - s * zv) * inv_c;
			zv = c * zv - s * t;
			memcpy(zr + v * VECTOR_LANES, &zv, sizeof(DoubleVector));
			lc[v] = t;
		}
	}
#pragma GCC unroll 8
	for (v = first; v < CHUNK_VECTORS; v++)
		memcpy(l + v * VECTOR_LANES, &lc[v], sizeof(DoubleVector));
}

/*
 * rotate_vectors over vectors [first, CHUNK_VECTORS): the bulk passes
 * first = 0, a column of the chunk's triangle skips the vectors above its
 * diagonal.
 */
VECTOR_CLONES
static void
rotate_chunk(double *restrict l, double *restrict z, const HyperbolicRotation *restrict rot,
			 int k, int first)
{
	StaticAssertStmt(CHUNK_VECTORS == 8, "rotate_chunk spells out eight cases");
	switch (first)
	{
		case 0:
			rotate_vectors(l, z, rot, k, 0);
			break;
		case 1:
			rotate_vectors(l, z, rot, k, 1);
			break;
		case 2:
			rotate_vectors(l, z, rot, k, 2);
			break;
		case 3:
			rotate_vectors(l, z, rot, k, 3);
			break;
		case 4:
			rotate_vectors(l, z, rot, k, 4);
			break;
		case 5:
			rotate_vectors(l, z, rot, k, 5);
			break;
		case 6:
			rotate_vectors(l, z, rot, k, 6);
			break;
		default:
			rotate_vectors(l, z, rot, k, 7);
			break;
	}
}

/*
 * The k rotations of column j at its pivot *pivot, from z_r[j] (zj[r *
 * CHUNK]); updates the pivot.  False when L L' - z z' would not be
 * positive definite.
 *
 * The pivots form a chain, l_r+1^2 = l_r^2 - z_r^2.  We carry the square
 * (one FMA, a single rounding, like (l - z)(l + z)) so that the square
 * roots and the division of each rotation are off the chain:
 * c = l_r+1 / l_r, s = z_r / l_r, 1/c = l_r / l_r+1.
 */
static bool
make_column_rotations(double *pivot, const double *zj, int k, HyperbolicRotation *rot)
{
	double		square = *pivot * *pivot;
	double		root = *pivot;
	double		inv_root = 1.0 / root;
	int			r;

	for (r = 0; r < k; r++)
	{
		double		z = zj[(Size) r * CHUNK];
		double		next_square,
					next_root,
					next_inv;

		if (z == 0.0)
		{
			/* the identity, exactly: (l - 0 z) / 1 = l and 1 z - 0 l = z */
			rot[r].s = 0.0;
			rot[r].c = 1.0;
			rot[r].inv_c = 1.0;
			continue;
		}
		next_square = fma(-z, z, square);
		if (!(next_square > 0.0))
			return false;
		next_root = sqrt(next_square);
		next_inv = 1.0 / next_root;
		rot[r].c = next_root * inv_root;
		rot[r].s = z * inv_root;
		rot[r].inv_c = root * next_inv;
		square = next_square;
		root = next_root;
		inv_root = next_inv;
	}
	*pivot = root;
	return true;
}

/* one group of k <= ROW_GROUP rows; z is k x p, already scaled */
static bool
downdate_group(double *lp, int p, const double *z, int k, HyperbolicRotation *rots,
			   double *zchunk)
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

			memcpy(zc, z + (Size) r * p + i0, sizeof(double) * rows);
			for (e = rows; e < CHUNK; e++)
				zc[e] = 0.0;
		}

		/* every column left of the chunk: its k rotations are known */
		for (j = 0; j < i0; j++)
		{
			double	   *piece = lp + packed_column(p, j) + (i0 - j);

			if (rows == CHUNK)
				rotate_chunk(piece, zchunk, rots + (Size) j * k, k, 0);
			else
			{
				/* padded lanes stay zero: (0 - s 0) / c = 0 */
				memcpy(lbuf, piece, sizeof(double) * rows);
				for (e = rows; e < CHUNK; e++)
					lbuf[e] = 0.0;
				rotate_chunk(lbuf, zchunk, rots + (Size) j * k, k, 0);
				memcpy(piece, lbuf, sizeof(double) * rows);
			}
		}

		/*
		 * The chunk's own triangle, column by column: fix the column's k
		 * rotations at its pivot, then rotate the rows below it like a bulk
		 * column, skipping the vectors wholly above them.  The lane of row j
		 * is spent once its rotations are made (z_r[j] feeds no later
		 * column) and is zeroed, so that the lanes at and above the
		 * diagonal stay zero in lbuf: (0 - s 0) / c = 0.
		 */
		for (j = i0; j < i0 + rows; j++)
		{
			double	   *col = lp + packed_column(p, j);
			HyperbolicRotation *rot = rots + (Size) j * k;
			int			lane = j - i0;
			int			below = rows - lane - 1;

			if (!make_column_rotations(&col[0], zchunk + lane, k, rot))
				return false;
			for (r = 0; r < k; r++)
				zchunk[(Size) r * CHUNK + lane] = 0.0;
			if (below > 0)
			{
				memset(lbuf, 0, sizeof(lbuf));
				memcpy(lbuf + lane + 1, col + 1, sizeof(double) * below);
				rotate_chunk(lbuf, zchunk, rot, k, (lane + 1) / VECTOR_LANES);
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
	double	   *z = palloc(sizeof(double) * group * p);
	HyperbolicRotation *rots = palloc(sizeof(HyperbolicRotation) * group * p);
	double	   *zchunk = palloc(sizeof(double) * group * CHUNK);
	bool		ok = true;
	int			g;

	for (g = 0; g < k && ok; g += group)
	{
		int			rows = Min(group, k - g);
		int			r,
					j;

		for (r = 0; r < rows; r++)
		{
			double		root = sqrt(weights[g + r]);
			const double *xr = x + (Size) (g + r) * p;

			for (j = 0; j < p; j++)
				z[(Size) r * p + j] = xr[j] * root;
		}
		ok = downdate_group(lp, p, z, rows, rots, zchunk);
	}
	pfree(z);
	pfree(rots);
	pfree(zchunk);
	return ok;
}

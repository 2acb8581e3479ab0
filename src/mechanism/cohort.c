/*-------------------------------------------------------------------------
 *
 * cohort.c
 *	  Erasing a whole cohort (seed 003, docs/mechanisms.md §3) from its
 *	  statistics alone, for the Newton and exact mechanisms, and keeping
 *	  those statistics in step with the rows of each change.  Maths only:
 *	  exec/cohorts.c finds the cohorts a statement erases, reads and writes
 *	  unlearn.cohorts (store/cohort_store.c) and rebuilds the statistics
 *	  by a pass over the table when the anchor moves.
 *
 * The statistics of cohort c (unlearn.h, CohortStats) at the anchor a_k of
 * class k (w0_k for the logistic loss; the origin for least squares, whose
 * Hessian does not depend on w, so that they never need rebuilding):
 *
 *	 H_c = sum_c l''(a.x) x x',  g_c = sum_c l'(a.x) x,  C_c = sum_c l''(a.x).
 *
 * Erasing c moves class k by one Newton step on the rows left, D' = D - c:
 *
 *	 H' = H - H_c (refactored; H = L L' is the Hessian of D at w0),
 *	 Delta^ = g_c + H_c (w - a),	v = H'^{-1} Delta^,  w <- w + v,
 *
 * which is exact for least squares.  Delta^ stands for Delta = sum_c
 * l'(w.x) x, the gradient the rows of c take away; for the logistic loss
 * |l'''| <= l'', so with t = (w - a).x, |t| <= ||w - a|| = delta,
 *
 *	 |l'(w.x) - l'(a.x) - l''(a.x) t| <= l''(a.x) (e^|t| - 1 - |t|)
 *										<= (1/2) e^delta l''(a.x) t^2,
 *
 * and ||Delta - Delta^|| <= (1/2) e^delta (w - a)' H_c (w - a), read from
 * H_c alone.  The rest of the new residual, (int H_{D'}(w + s v) ds - H')v,
 * is what the mechanism's step bound (newton.c's taylor form) bounds for
 * a step from w with the factor of H', so the bound of the erasure is
 * that step bound plus the term above plus the rounding of the
 * statistics (their updates since the last rebuild: N_c terms of sizes
 * M_c and W_c) and of forming and factoring H - H_c.  No row is read.
 *
 * Cost: O(p^3) per class for refactoring H - H_c, O(p^2) for the step;
 * keeping the statistics in step costs O(p^2) per changed row and class.
 *
 *-------------------------------------------------------------------------
 */
#include "mechanism/mechanism.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

/* the parts of a cohort's buffer (unlearn.h: COHORT_DOUBLES) */
double *
cohort_hessian(const UnlearnModel *m, const CohortStats *cs, int k)
{
	return cs->buffer + PACKED_SIZE(m->def.p) * k;
}

double *
cohort_gradient(const UnlearnModel *m, const CohortStats *cs, int k)
{
	return cs->buffer + PACKED_SIZE(m->def.p) * m->released.nclasses + (Size) m->def.p * k;
}

/* C_c, M_c and W_c of class k, and N_c */
static double *
cohort_sums(const UnlearnModel *m, const CohortStats *cs, int k)
{
	return cs->buffer + (PACKED_SIZE(m->def.p) + m->def.p) * m->released.nclasses + 3 * k;
}

static double *
cohort_updates(const UnlearnModel *m, const CohortStats *cs)
{
	return cs->buffer + (PACKED_SIZE(m->def.p) + m->def.p + 3) * m->released.nclasses;
}

/* n_c: a classifier's rows per label, nlabels of them */
double *
cohort_label_rows(const UnlearnModel *m, const CohortStats *cs)
{
	return cohort_updates(m, cs) + 1;
}

static int
cohort_labels(const UnlearnModel *m)
{
	return m->def.loss == LOSS_SQUARED ? 0 : m->released.nlabels;
}

/* S_c: the column sums of a 'standardize' model, or NULL */
double *
cohort_column_sums(const UnlearnModel *m, const CohortStats *cs)
{
	if (m->def.preprocess != PREPROCESS_STANDARDIZE || m->state.column_sums == NULL)
		return NULL;
	return cohort_label_rows(m, cs) + cohort_labels(m);
}

/* doubles of a cohort's statistics (unlearn.h) */
Size
cohort_doubles(const UnlearnModel *m)
{
	return (PACKED_SIZE(m->def.p) + m->def.p + 3) * m->released.nclasses + 1 +
		cohort_labels(m) +
		(m->def.preprocess == PREPROCESS_STANDARDIZE && m->state.column_sums != NULL ?
		 column_sum_width(m) * map_columns(m) : 0);
}

/* a_k: the anchor of class k, or NULL for the origin (least squares) */
static const double *
cohort_anchor(const UnlearnModel *m, int k)
{
	return m->def.loss == LOSS_SQUARED ? NULL : m->state.anchor + (Size) k * m->def.p;
}

/*
 * Add (sign +1) or take away (-1) rows of rows to c's statistics at the
 * anchor: rows->x[index[i]] for i < count, or the first count rows when
 * index is NULL.  H_c moves by one DSPR per row for a few rows, and for
 * many by one DSYRK (alpha = sign) over the rows scaled by sqrt(l''), as
 * step.c's update_gram chooses.  O(count p^2) per class.
 */
void
cohort_add_rows(const UnlearnModel *m, CohortStats *cs, const StepRows *rows,
				const int *index, int count, double sign)
{
	int			p = m->def.p;
	bool		blocked = count >= 8;
	double	   *z = blocked ? MemoryContextAllocHuge(CurrentMemoryContext,
													 sizeof(double) * ((Size) count * p + (Size) p * p)) : NULL;
	double	   *full = blocked ? z + (Size) count * p : NULL;
	int			i,
				j,
				k;

	if (count == 0)
		return;
	for (k = 0; k < m->released.nclasses; k++)
	{
		const double *a = cohort_anchor(m, k);
		double	   *h = cohort_hessian(m, cs, k);
		double	   *g = cohort_gradient(m, cs, k);
		double	   *sums = cohort_sums(m, cs, k);

		for (i = 0; i < count; i++)
		{
			int			r = index != NULL ? index[i] : i;
			const double *x = rows->x + (Size) r * p;
			double		t = row_target((UnlearnModel *) m, rows, r, k);
			double		zz = a != NULL ? vec_dot(a, x, p) : 0.0;
			double		d1 = loss_d1(m->def.loss, zz, t);
			double		d2 = loss_d2(m->def.loss, zz, t);

			if (blocked)
			{
				double		root = sqrt(Max(d2, 0.0));

				for (j = 0; j < p; j++)
					z[(Size) i * p + j] = root * x[j];
			}
			else
				cblas_dspr(CblasColMajor, CblasLower, p, sign * d2, x, 1, h);
			cblas_daxpy(p, sign * d1, x, 1, g, 1);
			sums[0] += sign * d2;
			sums[1] += fabs(d1);
			sums[2] += d2;
		}
		if (blocked)
		{
			/* beta = 0: DSYRK writes the whole lower triangle */
			cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, count, sign, z, p, 0.0, full, p);
			for (j = 0; j < p; j++)
				for (i = j; i < p; i++)
					h[packed_column(p, j) + (i - j)] += full[(Size) j * p + i];
		}
	}
	if (blocked)
		pfree(z);
	*cohort_updates(m, cs) += count;
	cs->rows += (int64) (sign * count);
	cs->changed = true;
}

/*
 * The statistics of a cohort must describe at most its rows: finite,
 * C_c and the update sums not negative, and not more rows than updates.
 * A stored buffer that fails this is not used (exec/cohorts.c).
 */
bool
cohort_stats_plausible(const UnlearnModel *m, const CohortStats *cs)
{
	Size		n = cohort_doubles(m);
	double	   *labels = cohort_label_rows(m, cs);
	double		labelled = 0.0;
	Size		i;
	int			k;

	for (i = 0; i < n; i++)
		if (!isfinite(cs->buffer[i]))
			return false;
	for (k = 0; k < cohort_labels(m); k++)
	{
		if (labels[k] < 0.0 || labels[k] != floor(labels[k]))
			return false;
		labelled += labels[k];
	}
	if (cohort_labels(m) > 0 && labelled != (double) cs->rows)
		return false;
	for (k = 0; k < m->released.nclasses; k++)
	{
		double	   *sums = cohort_sums(m, cs, k);

		if (sums[0] < 0.0 || sums[1] < 0.0 || sums[2] < 0.0)
			return false;
	}
	return cs->rows > 0 && *cohort_updates(m, cs) >= (double) cs->rows;
}

/*
 * Replace the packed lower factor lfac of H by that of H - h (packed).
 * Returns false if H - h is not positive definite.  O(p^3).
 */
static bool
factor_minus(int p, double *lfac, const double *h)
{
	double	   *l = palloc0(sizeof(double) * p * p);
	double	   *a = palloc0(sizeof(double) * p * p);
	double	   *hp = palloc(sizeof(double) * PACKED_SIZE(p));
	Size		i;
	bool		ok;

	full_from_packed(lfac, p, l);
	/* a = L L' (lower) */
	cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, p, 1.0, l, p, 0.0, a, p);
	packed_from_full(a, p, hp);
	for (i = 0; i < PACKED_SIZE(p); i++)
		hp[i] -= h[i];
	ok = chol_factor_packed(hp, p);
	if (ok)
		memcpy(lfac, hp, sizeof(double) * PACKED_SIZE(p));
	pfree(l);
	pfree(a);
	pfree(hp);
	return ok;
}

/* trace of a packed symmetric matrix */
static double
packed_trace(const double *ap, int p)
{
	double		t = 0.0;
	int			j;

	for (j = 0; j < p; j++)
		t += ap[packed_column(p, j)];
	return t;
}

/*
 * Erase cohort c from m: refactor each class's H - H_c, take the step from
 * Delta^ and add each class's bound to statement_bound (see the header);
 * step_bound_of is the mechanism's bound of a step (newton.c, exact.c),
 * called with no rows.  m->released.rows must already count the rows
 * left.  Returns false, with m's factor partly changed, if some H - H_c is
 * not positive definite: the caller restores or retrains.
 */
bool
cohort_erase(UnlearnModel *m, const CohortStats *cs, double *statement_bound,
			 StepBoundFunction step_bound_of)
{
	int			p = m->def.p;
	int			K = m->released.nclasses;
	Size		packed = PACKED_SIZE(p);
	double		gamma_p = p * DBL_EPSILON / (1.0 - p * DBL_EPSILON);
	double		updates = *cohort_updates(m, cs);
	double	   *drift = palloc(sizeof(double) * p);
	double	   *hd = palloc(sizeof(double) * p);
	double	   *v = palloc(sizeof(double) * p);
	double	   *work = palloc(sizeof(double) * p);
	double	   *work2 = palloc(sizeof(double) * p);
	StepRows	none = {0, NULL, NULL, NULL};
	StepCache	cache = {NULL, palloc(sizeof(double) * K)};
	int			k,
				j;

	for (k = 0; k < K; k++)
	{
		double	   *lfac = m->state.factor + packed * k;
		double	   *w = m->released.coef + (Size) k * p;
		const double *a = cohort_anchor(m, k);
		const double *h = cohort_hessian(m, cs, k);
		double	   *sums = cohort_sums(m, cs, k);
		double		trace_before = vec_dot(lfac, lfac, (int) packed);
		double		trace_c = Max(packed_trace(h, p), 0.0);
		double		drift_norm,
					s_quad,
					bound,
					extra;
		StepBoundInput in = {k, &none, 0, 0, &none, 0, 0, w,
			m->state.anchor + (Size) k * p, v, work, work2, gamma_p};

		if (!factor_minus(p, lfac, h))
			return false;
		m->state.weight_sum[k] = Max(m->state.weight_sum[k] - sums[0], 0.0);
		cache.factor_norm2[k] = vec_dot(lfac, lfac, (int) packed);

		/* Delta^ = g_c + H_c (w - a) */
		for (j = 0; j < p; j++)
			drift[j] = w[j] - (a != NULL ? a[j] : 0.0);
		drift_norm = vec_norm(drift, p) * (1.0 + p * DBL_EPSILON);
		s_quad = Max(packed_quadratic(h, p, drift, hd), 0.0);
		memcpy(v, cohort_gradient(m, cs, k), sizeof(double) * p);
		cblas_daxpy(p, 1.0, hd, 1, v, 1);
		chol_solve_packed(lfac, p, v);

		bound = step_bound_of(m, &cache, &in);
		/*
		 * The rounding of the statistics' N_c updates, of H_c (w - a), and
		 * of forming and refactoring H - H_c (Higham, Thm 8.5, as a solve)
		 */
		extra = rounding_allowance((int64) updates, p, sums[1] + sums[2] * drift_norm) +
			(2.0 * gamma_p + gamma_p * gamma_p) * (trace_before + trace_c) * vec_norm(v, p);
		/* Delta^ against Delta (logistic): (1/2) e^delta (w - a)' H_c (w - a) */
		if (loss_gamma(m->def.loss) > 0.0)
			extra += 0.5 * exp(drift_norm) * s_quad;
		bound += extra * (1.0 + 64.0 * p * DBL_EPSILON);
		if (!(bound >= 0.0))
			bound = INFINITY;
		statement_bound[k] += bound;
		cblas_daxpy(p, 1.0, v, 1, w, 1);
	}
	pfree(drift);
	pfree(hd);
	pfree(v);
	pfree(work);
	pfree(work2);
	pfree(cache.factor_norm2);
	return true;
}

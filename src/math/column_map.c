/*-------------------------------------------------------------------------
 *
 * column_map.c
 *	  The row map: from a row's raw feature values to the model's row in
 *	  the unit ball, used identically at training, removal, addition and
 *	  prediction; and the per-column statistics of the 'standardize' map.
 *
 * The map.  With centre c_j and spread s_j of feature column j (an array
 * column is one column: every element shares its c and s), p = d + 1 with
 * an intercept (else d), the fixed divisor D = sqrt(p) and the intercept
 * scaling a:
 *
 *	 z_j = clamp((x_j - c_j) / s_j, +-Z_MAX),  z = (z, a) with an intercept,
 *	 map(x) = z / max(D, ||z||).
 *
 * The intercept's weight w_0 gives the margin a w_0 / D, so the penalty
 * Lambda w_0^2 / 2 weighs on that margin 1 / a^2 as much as on a = 1: a = 2
 * (models trained from 0.8.0; a = 1 before) brings one-vs-rest accuracy
 * near scikit-learn's, which leaves the intercept unpenalised
 * (bench/intercept.py).  A penalty-free intercept would not be strongly
 * convex, which the certificate needs.
 *
 * Every row lands in the unit ball (certified-removal.md §1) and every
 * finite x maps to a finite vector; nothing of the map but c and s comes
 * from the rows.
 *
 * Missing values ("nulls": "impute").  A missing x_j is NaN in the raw row
 * and maps to z_j = 0: the value c_j.  The map stays in the unit ball and
 * reveals nothing beyond c.  The mean and standard deviation of a column
 * are those of its present values, so each column also keeps S0, the
 * number of them, beside S1 and S2 below; a column with none has the cell
 * of mean 0 and deviation 0.  (Models trained before 0.3.0 keep their stored D.)
 *
 * Where c and s come from ('standardize').  From the mean m_j and standard
 * deviation sd_j of the column over the rows the model reflects, through
 * a grid of k steps per power of two (k = 4 from 0.8.0, 1 before):
 *
 *	 sd* = max(sd_j, 2^-20 max(|m_j|, 1)),   s_j = 2^(round(k log2 sd*) / k),
 *	 h = s_j / 4,                             c_j = h round(m_j / h).
 *
 * c and s are public, so they must not depend on a deleted row (the
 * certificate covers only the weights).  They are a function of the rows
 * the model reflects now: the statement path keeps S1 = sum t and S2 =
 * sum t^2 over those rows' values, t = clamp((x - c) / s, +-T_MAX)
 * (under 'impute' also S0, the count of present values), and when a statement would move a
 * column's m or sd* into another grid cell, or within rounding distance
 * of a cell's edge, the model is retrained, which recomputes c and s from
 * the rows left.  Otherwise c and s are exactly what a retrain would
 * compute, so they reveal nothing of the rows removed.
 *
 * Cost: O(d) per row changed; no SPI, no I/O.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <float.h>
#include <math.h>

/* standardised coordinates are clamped here: |x - c| / s can overflow */
#define Z_MAX ROW_MAP_CLAMP
/* the sums' terms are clamped here, so that S2 stays finite */
#define T_MAX 1e100
/* sd* floor relative to the column's magnitude (see the header) */
#define SPREAD_FLOOR_EXPONENT (-20)

void
model_row_map(const UnlearnModel *m, RowMap *map)
{
	map->dims = m->def.dims;
	map->intercept = m->def.intercept;
	map->pooled = m->def.feature_array;
	map->scale = m->def.scale;
	map->intercept_scaling = m->def.intercept_scaling;
	map->centre = m->def.centre;
	map->spread = m->def.spread;
	map->impute = m->def.nulls == NULLS_IMPUTE;
}

/*
 * A standardised coordinate clamped to +-Z_MAX, NaN to +Z_MAX: each
 * comparison is false for NaN, and each is one minsd or maxsd.
 */
static inline double
clamp_coordinate(double z)
{
	z = z < Z_MAX ? z : Z_MAX;
	return z > -Z_MAX ? z : -Z_MAX;
}

/*
 * max |v_j|, in four independent running maxima so that the loop is not
 * one chain of dependent comparisons; max is exact, so the order does not
 * change the result.
 */
static double
largest_magnitude(const double *v, int n)
{
	double		m0 = 0.0,
				m1 = 0.0,
				m2 = 0.0,
				m3 = 0.0;
	int			j;

	for (j = 0; j + 3 < n; j += 4)
	{
		m0 = Max(m0, fabs(v[j]));
		m1 = Max(m1, fabs(v[j + 1]));
		m2 = Max(m2, fabs(v[j + 2]));
		m3 = Max(m3, fabs(v[j + 3]));
	}
	for (; j < n; j++)
		m0 = Max(m0, fabs(v[j]));
	return Max(Max(m0, m1), Max(m2, m3));
}

/*
 * Scale v by 1 / divisor, as a multiplication by the reciprocal unless
 * the divisor is subnormal and the reciprocal not finite.
 */
static void
scale_by_reciprocal(double *v, int n, double divisor)
{
	double		inverse = 1.0 / divisor;
	int			j;

	if (isfinite(inverse))
		for (j = 0; j < n; j++)
			v[j] *= inverse;
	else
		for (j = 0; j < n; j++)
			v[j] /= divisor;
}

void
map_row(const RowMap *map, double *row)
{
	int			dims = map->dims;
	int			p = dims + (map->intercept ? 1 : 0);
	const double *centre = map->centre;
	const double *spread = map->spread;
	double		largest;
	double		sum = 0.0;
	double		divisor;
	int			j;

	/* a missing value is the centre: z_j = 0 */
	if (map->impute)
		for (j = 0; j < dims; j++)
			if (isnan(row[j]))
				row[j] = centre == NULL ? 0.0 : centre[map->pooled ? 0 : j];
	/* (x_j - c_j) / s_j is computed as (x_j - c_j) * (1 / s_j) */
	if (centre != NULL && map->pooled)
	{
		double		c = centre[0];
		double		inverse = 1.0 / spread[0];

		for (j = 0; j < dims; j++)
			row[j] = clamp_coordinate((row[j] - c) * inverse);
	}
	else if (centre != NULL)
		for (j = 0; j < dims; j++)
			row[j] = clamp_coordinate((row[j] - centre[j]) * (1.0 / spread[j]));
	largest = largest_magnitude(row, dims);
	if (map->intercept)
	{
		row[dims] = map->intercept_scaling;
		largest = Max(largest, map->intercept_scaling);
	}

	/*
	 * ||z|| scaled by its largest entry, so that no square overflows; the
	 * squares are summed in index order, one division each, the loops
	 * multiply
	 */
	if (largest > 0)
	{
		double		inverse = 1.0 / largest;

		if (isfinite(inverse))
			for (j = 0; j < p; j++)
			{
				double		t = row[j] * inverse;

				sum += t * t;
			}
		else
			for (j = 0; j < p; j++)
			{
				double		t = row[j] / largest;

				sum += t * t;
			}
	}
	divisor = Max(map->scale, largest * sqrt(sum));
	if (divisor > 0)
		scale_by_reciprocal(row, p, divisor);
}

/*
 * D for a model of p weights: sqrt(p), and for least squares (from
 * 0.20.0) 2 sqrt(p).  A mapped row's squared norm is about d + a^2 = p + 3
 * before the division, so sqrt(p) divides most rows by their own norm,
 * which a classifier's certificate needs (rows in the unit ball) but which
 * bends a regression: on diabetes it cost 0.12 of held-out R^2 against the
 * same objective without it (bench/nulls.py).  Least squares removes
 * exactly, so its rows need no unit ball; 2 sqrt(p) leaves the division
 * to outliers.
 */
double
row_map_divisor(int p, UnlearnLoss loss)
{
	return (loss == LOSS_SQUARED ? 2.0 : 1.0) * sqrt((double) p);
}

/*
 * The grid cell of a column's mean and spread (see the header), with steps
 * grid steps per power of two: s = 2^e * 2^(r / steps), 0 <= r < steps.
 */
static void
grid_cell(double mean, double sd, int steps, double *centre, double *spread)
{
	double		floor_sd = ldexp(Max(fabs(mean), 1.0), SPREAD_FLOOR_EXPONENT);
	long		step = lround(steps * log2(Max(sd, floor_sd)));
	long		octave = step >= 0 ? step / steps : -((-step + steps - 1) / steps);
	double		s = ldexp(pow(2.0, (double) (step - octave * steps) / steps), (int) octave);
	double		h = s / 4;

	*spread = s;
	/* + 0.0 makes a centre of -0 +0: its sign must not tell which side 0 a mean was */
	*centre = h * round(mean / h) + 0.0;
	if (!isfinite(*centre))
		*centre = mean;
}

/* a row's term t = clamp((x - c) / s, +-T_MAX) in the sums of column c */
static inline double
sum_term(const UnlearnModel *m, int c, double x)
{
	double		t = (x - m->def.centre[c]) / m->def.spread[c];

	return t > T_MAX ? T_MAX : (t < -T_MAX ? -T_MAX : t);
}

static void column_sums_apply(UnlearnModel *m, const double *x, int64 count, int stride,
							  double sign);
static bool column_map_holds(const UnlearnModel *m, int64 rows, int64 updates);

int
map_columns(const UnlearnModel *m)
{
	return m->def.feature_array ? 1 : m->def.dims;
}

/* the sums each column keeps: S1, S2, and under 'impute' S0 */
int
column_sum_width(const UnlearnModel *m)
{
	return m->def.nulls == NULLS_IMPUTE ? 3 : 2;
}

/*
 * Fit centre and spread of every column to the n raw rows of x (stride
 * floats apart), and start the sums S1, S2 over them.  Sums run in long
 * double, so a fresh fit is accurate to far below the grid's tolerance.
 */
void
column_map_fit(UnlearnModel *m, const double *x, int64 n, int stride)
{
	int			ncol = map_columns(m);
	int			per = m->def.feature_array ? m->def.dims : 1;
	int			c;

	m->def.centre = palloc(sizeof(double) * ncol);
	m->def.spread = palloc(sizeof(double) * ncol);
	m->state.column_sums = palloc0(sizeof(double) * column_sum_width(m) * ncol);
	for (c = 0; c < ncol; c++)
	{
		long double sum = 0,
					sq = 0,
					mean = 0;
		long double count = 0;
		int64		i;
		int			e;

		/* a missing value (NaN, under 'impute' only) is not counted */
		for (i = 0; i < n; i++)
			for (e = 0; e < per; e++)
				if (!isnan(x[i * stride + c + e]))
				{
					sum += x[i * stride + c + e];
					count += 1;
				}
		if (count > 0)
			mean = sum / count;
		for (i = 0; i < n; i++)
			for (e = 0; e < per; e++)
				if (!isnan(x[i * stride + c + e]))
				{
					long double t = x[i * stride + c + e] - mean;

					sq += t * t;
				}
		grid_cell((double) mean, count > 0 ? (double) sqrtl(sq / count) : 0.0,
				  m->def.spread_steps, &m->def.centre[c], &m->def.spread[c]);
	}
	column_sums_apply(m, x, n, stride, 1.0);
}

/*
 * Fit centre and spread of every column c to its mean and standard
 * deviation over count[c] values (the column moments aggregate; mean and
 * deviation 0 for a column without values), and start the sums from
 * them: S1 = count (mean - c) / s and S2 = count ((sd / s)^2 + ((mean -
 * c) / s)^2), which the terms' clamp never changes here (a value lies
 * within sqrt(count) standard deviations of the mean, and s is at least
 * 2^(-1/8) of the deviation or of its floor), and S0 = count.
 */
void
column_map_fit_moments(UnlearnModel *m, const double *count, const double *mean, const double *sd)
{
	int			ncol = map_columns(m);
	int			width = column_sum_width(m);
	int			c;

	m->def.centre = palloc(sizeof(double) * ncol);
	m->def.spread = palloc(sizeof(double) * ncol);
	m->state.column_sums = palloc0(sizeof(double) * width * ncol);
	for (c = 0; c < ncol; c++)
	{
		long double offset,
					ratio,
					n = count[c];

		grid_cell(mean[c], sd[c], m->def.spread_steps, &m->def.centre[c], &m->def.spread[c]);
		offset = ((long double) mean[c] - m->def.centre[c]) / m->def.spread[c];
		ratio = (long double) sd[c] / m->def.spread[c];
		m->state.column_sums[width * c] = (double) (n * offset);
		m->state.column_sums[width * c + 1] = (double) (n * (ratio * ratio + offset * offset));
		if (width == 3)
			m->state.column_sums[width * c + 2] = count[c];
	}
}

/*
 * Add (sign 1) or take away (sign -1) count raw rows from S1 and S2.  Each
 * call's terms are summed in long double, so the stored sums take one
 * rounding per call and column.
 */
static void
column_sums_apply(UnlearnModel *m, const double *x, int64 count, int stride, double sign)
{
	int			ncol = map_columns(m);
	int			per = m->def.feature_array ? m->def.dims : 1;
	int			width = column_sum_width(m);
	int			c;

	for (c = 0; c < ncol; c++)
	{
		long double sum = 0,
					sq = 0;
		int64		present = 0;
		int64		i;
		int			e;

		for (i = 0; i < count; i++)
			for (e = 0; e < per; e++)
			{
				double		t;

				if (width == 3 && isnan(x[i * stride + c + e]))
					continue;	/* missing */
				t = sum_term(m, c, x[i * stride + c + e]);
				sum += t;
				sq += (long double) t * t;
				present++;
			}
		m->state.column_sums[width * c] += sign * (double) sum;
		m->state.column_sums[width * c + 1] += sign * (double) sq;
		if (width == 3)
			m->state.column_sums[width * c + 2] += sign * (double) present;
	}
}

/*
 * Whether the sums over rows rows (after a statement) still give every
 * column the model's grid cell, with a margin for the rounding of the
 * sums.  The sums went through at most `updates` additions of doubles, so
 * each is within updates * 2 eps of its value in relative terms (of the
 * sum of magnitudes); the margin is 64 times that, and a fresh fit (long
 * double) is far more accurate.
 */
static bool
column_map_holds(const UnlearnModel *m, int64 rows, int64 updates)
{
	int			ncol = map_columns(m);
	int			width = column_sum_width(m);
	double		per = m->def.feature_array ? m->def.dims : 1;
	double		tol = 64.0 * ((double) updates * per + 1.0) * DBL_EPSILON;
	int			c;

	if (rows <= 0)
		return false;
	for (c = 0; c < ncol; c++)
	{
		double		s = m->def.spread[c];
		double		count = width == 3 ? m->state.column_sums[width * c + 2] : (double) rows * per;
		double		offset,
					var,
					sd,
					mean,
					floor_sd,
					cell_log;

		if (width == 3 && count < 0.5)
		{
			/* no value present: the cell of mean 0 and deviation 0 */
			double		centre0,
						spread0;

			grid_cell(0.0, 0.0, m->def.spread_steps, &centre0, &spread0);
			if (m->def.centre[c] != centre0 || s != spread0)
				return false;
			continue;
		}

		/* in units of s: the mean's offset from c, and the variance */
		offset = m->state.column_sums[width * c] / count;
		var = m->state.column_sums[width * c + 1] / count - offset * offset;
		sd = sqrt(Max(var, 0.0));
		mean = m->def.centre[c] + offset * s;
		floor_sd = ldexp(Max(fabs(mean), 1.0), SPREAD_FLOOR_EXPONENT) / s;
		cell_log = log2(Max(sd, floor_sd));

		if (!isfinite(offset) || !isfinite(var) || !isfinite(mean) ||
			fabs(offset) >= T_MAX / 2 || var >= T_MAX)
			return false;
		/* the grid step is s / 4: the offset stays within 1/8 */
		if (fabs(offset) > 0.125 - tol * (fabs(m->def.centre[c]) / s + 0.25 + sd))
			return false;
		/* log2 s is on a grid of 1 / spread_steps: sd stays within half a step */
		if (fabs(cell_log) > 0.5 / m->def.spread_steps - 4 * tol)
			return false;
	}
	return true;
}

/*
 * Add (sign 1) or take away (-1) one raw row's terms of S1 and S2 to
 * sums (2 per column), as column_sums_apply takes them: for the sums a
 * cohort keeps (mechanism/cohort.c).
 */
void
column_sums_of_row(const UnlearnModel *m, const double *x, double *sums, double sign)
{
	int			ncol = map_columns(m);
	int			per = m->def.feature_array ? m->def.dims : 1;
	int			width = column_sum_width(m);
	int			c,
				e;

	for (c = 0; c < ncol; c++)
		for (e = 0; e < per; e++)
		{
			double		t;

			if (width == 3 && isnan(x[c + e]))
				continue;		/* missing */
			t = sum_term(m, c, x[c + e]);
			sums[width * c] += sign * t;
			sums[width * c + 1] += sign * t * t;
			if (width == 3)
				sums[width * c + 2] += sign;
		}
}

/*
 * Take away the sums of `rows` raw rows that left together (a cohort's)
 * and say whether centre and spread still hold, as column_map_update.
 */
bool
column_map_update_sums(UnlearnModel *m, const double *sums, int64 rows)
{
	int			c;

	if (m->def.preprocess != PREPROCESS_STANDARDIZE || m->state.column_sums == NULL)
		return true;
	for (c = 0; c < column_sum_width(m) * map_columns(m); c++)
		m->state.column_sums[c] -= sums[c];
	return column_map_still_holds(m, m->released.rows - rows, rows);
}

/*
 * Whether the sums, as they are, still give every column the model's
 * grid cell over rows_after rows, after changes of `changed` rows beyond
 * the model's counters (column_map_holds).
 */
bool
column_map_still_holds(const UnlearnModel *m, int64 rows_after, int64 changed)
{
	if (m->def.preprocess != PREPROCESS_STANDARDIZE || m->state.column_sums == NULL)
		return true;
	return column_map_holds(m, rows_after, m->released.trained_rows +
							m->released.removed + m->released.inserted + changed);
}

/*
 * The sum of column c's raw values over the rows (rows of them, or under
 * 'impute' those where it is present) whose S1 the sums hold: S1 is the
 * sum of (x - centre) / spread, so the sum of x is spread S1 + count
 * centre.  For a 0/1 column, the number of its ones.
 */
double
column_value_sum(const UnlearnModel *m, int c, int64 rows)
{
	int			width = column_sum_width(m);
	double		count = width == 3 ? m->state.column_sums[width * c + 2] : (double) rows;

	return m->def.spread[c] * m->state.column_sums[width * c] + count * m->def.centre[c];
}

/*
 * Take one statement's raw rows into the sums of a 'standardize' model
 * and say whether its centre and spread still hold; false means the
 * model must be retrained on the rows left.
 */
bool
column_map_update(UnlearnModel *m, const RowBatch *removed, const RowBatch *added)
{
	int64		rows = m->released.rows;

	if (m->def.preprocess != PREPROCESS_STANDARDIZE || m->state.column_sums == NULL)
		return true;
	if (removed != NULL)
	{
		column_sums_apply(m, removed->x, removed->count, m->def.p, -1.0);
		rows -= removed->count;
	}
	if (added != NULL)
	{
		column_sums_apply(m, added->x, added->count, m->def.p, 1.0);
		rows += added->count;
	}
	return column_map_holds(m, rows, m->released.trained_rows +
							m->released.removed + m->released.inserted +
							(removed ? removed->count : 0) + (added ? added->count : 0));
}

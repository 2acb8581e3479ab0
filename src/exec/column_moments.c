/*-------------------------------------------------------------------------
 *
 * column_moments.c
 *	  The mean and variance of each feature column over a table's rows, as
 *	  a parallel SQL aggregate: unlearn._column_moments(x float8[], columns
 *	  int4), the first pass of a 'standardize' training (train_pass.c,
 *	  column_map.c).
 *
 * x holds the raw values of one row; column c is the run of elements
 * [c q, (c + 1) q) with q = length / columns (one column: a pooled array
 * column).  Per column the state keeps a shift K (the first value seen)
 * and the shifted sums
 *
 *	 S1 = sum (x - K),   S2 = sum (x - K)^2
 *
 * in long double, so that no finite double overflows them and the mean
 * and variance lose only about log10(n) digits of 19 to cancellation.
 * Two states combine by moving one's sums to the other's shift:
 * sum (x - K') = S1 + n (K - K'), sum (x - K')^2 = S2 + 2 (K - K') S1 +
 * n (K - K')^2.
 *
 * The state is a bytea that only these functions write: EXECUTE on the
 * transition, combine and final functions is revoked from PUBLIC, and
 * each checks the state's length against its header.
 *
 * Cost: O(length of x) per row, O(columns) per combine.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"

typedef struct MomentsState
{
	int32		vl_len_;
	int32		columns;
	int64		count;			/* values per column */
	/* then shift, S1 and S2: columns long doubles each */
} MomentsState;

static Size
moments_size(int columns)
{
	return sizeof(MomentsState) + sizeof(long double) * 3 * (Size) columns;
}

static long double *
moments_sums(MomentsState *s)
{
	return (long double *) (s + 1);
}

static MomentsState *
moments_arg(FunctionCallInfo fcinfo, int argno)
{
	MomentsState *s = (MomentsState *) PG_DETOAST_DATUM(PG_GETARG_DATUM(argno));

	if (VARSIZE(s) < sizeof(MomentsState) || s->columns < 1 ||
		s->columns > UNLEARN_MAX_DIMS || VARSIZE(s) != moments_size(s->columns) || s->count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid column moments state")));
	return s;
}

/* transition: (state, x float8[], columns int4) */
PG_FUNCTION_INFO_V1(unlearn_moments_add);
Datum
unlearn_moments_add(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	MomentsState *s = PG_ARGISNULL(0) ? NULL : (MomentsState *) PG_GETARG_POINTER(0);
	ArrayType  *a;
	const double *x;
	long double *shift,
			   *s1,
			   *s2;
	int			columns,
				per,
				n,
				c,
				e;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "unlearn._moments_add called outside an aggregate");
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
	{
		/* a null row adds nothing; with no state yet, there is none */
		if (s == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s);
	}
	a = PG_GETARG_ARRAYTYPE_P(1);
	columns = PG_GETARG_INT32(2);
	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID ||
		columns < 1 || columns > UNLEARN_MAX_DIMS || ARR_DIMS(a)[0] % columns != 0 ||
		(s != NULL && s->columns != columns))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("column moments need rows of the same whole number of values per column")));
	n = ARR_DIMS(a)[0];
	per = n / columns;
	x = (const double *) ARR_DATA_PTR(a);
	if (s == NULL)
	{
		s = MemoryContextAllocZero(aggcontext, moments_size(columns));
		SET_VARSIZE(s, moments_size(columns));
		s->columns = columns;
	}
	if (per == 0)
		PG_RETURN_POINTER(s);
	shift = moments_sums(s);
	s1 = shift + columns;
	s2 = s1 + columns;
	if (s->count == 0)
		for (c = 0; c < columns; c++)
			shift[c] = x[(Size) c * per];
	for (c = 0; c < columns; c++)
		for (e = 0; e < per; e++)
		{
			long double t = x[(Size) c * per + e] - shift[c];

			s1[c] += t;
			s2[c] += t * t;
		}
	s->count += per;
	PG_RETURN_POINTER(s);
}

/* combine: move the second state's sums to the first's shift and add */
PG_FUNCTION_INFO_V1(unlearn_moments_combine);
Datum
unlearn_moments_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	MomentsState *s = PG_ARGISNULL(0) ? NULL : (MomentsState *) PG_GETARG_POINTER(0);
	MomentsState *t;
	long double *sa,
			   *ta;
	int			columns,
				c;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "unlearn._moments_combine called outside an aggregate");
	if (PG_ARGISNULL(1))
	{
		if (s == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s);
	}
	t = moments_arg(fcinfo, 1);
	if (s == NULL || s->count == 0)
	{
		s = MemoryContextAlloc(aggcontext, VARSIZE(t));
		memcpy(s, t, VARSIZE(t));
		PG_RETURN_POINTER(s);
	}
	if (t->count == 0)
		PG_RETURN_POINTER(s);
	if (s->columns != t->columns)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot combine column moments of different widths")));
	columns = s->columns;
	sa = moments_sums(s);
	ta = moments_sums(t);
	for (c = 0; c < columns; c++)
	{
		long double d = ta[c] - sa[c];
		long double n = t->count;

		sa[columns + c] += ta[columns + c] + n * d;
		sa[2 * columns + c] += ta[2 * columns + c] + 2 * d * ta[columns + c] + n * d * d;
	}
	s->count += t->count;
	PG_RETURN_POINTER(s);
}

/* final: float8[] of the count, then each column's mean, then its standard deviation */
PG_FUNCTION_INFO_V1(unlearn_moments_final);
Datum
unlearn_moments_final(PG_FUNCTION_ARGS)
{
	MomentsState *s;
	long double *sums;
	double	   *out;
	int			columns,
				c;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = moments_arg(fcinfo, 0);
	columns = s->columns;
	sums = moments_sums(s);
	out = palloc0(sizeof(double) * (1 + 2 * (Size) columns));
	out[0] = (double) s->count;
	for (c = 0; c < columns && s->count > 0; c++)
	{
		long double n = s->count;
		long double mean_offset = sums[columns + c] / n;
		long double var = sums[2 * columns + c] / n - mean_offset * mean_offset;

		out[1 + c] = (double) (sums[c] + mean_offset);
		out[1 + columns + c] = (double) sqrtl(var > 0 ? var : 0);
	}
	PG_RETURN_DATUM(float8_array(out, 1 + 2 * columns));
}

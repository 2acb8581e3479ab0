/*-------------------------------------------------------------------------
 *
 * arrays.c
 *	  SQL arrays of the catalog's values (float8[], bigint[], text[], the
 *	  K x p coefficients), for the store's accessors and the SQL functions
 *	  that return them.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

/*
 * A one-dimensional array of n 8-byte values without nulls, written
 * directly: the row functions of a training pass build one per row.
 */
static Datum
eight_byte_array(const void *v, int n, Oid elemtype)
{
	Size		size;
	ArrayType  *a;

	if (n < 0)
		elog(ERROR, "unlearn: an array of %d elements", n);
	if (n == 0)
		return PointerGetDatum(construct_empty_array(elemtype));
	size = ARR_OVERHEAD_NONULLS(1) + sizeof(int64) * (Size) n;
	a = palloc(size);
	SET_VARSIZE(a, size);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = n;
	ARR_LBOUND(a)[0] = 1;
	memcpy(ARR_DATA_PTR(a), v, sizeof(int64) * (Size) n);
	return PointerGetDatum(a);
}

Datum
float8_array(const double *v, int n)
{
	return eight_byte_array(v, n, FLOAT8OID);
}

/* coefficients as a K x p array (1-D when K = 1) */
Datum
coef_array(const double *coef, int nclasses, int p)
{
	Datum	   *d = palloc(sizeof(Datum) * nclasses * p);
	int			dims[2];
	int			lbs[2] = {1, 1};
	int			i;

	for (i = 0; i < nclasses * p; i++)
		d[i] = Float8GetDatum(coef[i]);
	dims[0] = nclasses;
	dims[1] = p;
	if (nclasses == 1)
		return PointerGetDatum(construct_md_array(d, NULL, 1, &dims[1], lbs, FLOAT8OID,
												  sizeof(float8), FLOAT8PASSBYVAL,
												  TYPALIGN_DOUBLE));
	return PointerGetDatum(construct_md_array(d, NULL, 2, dims, lbs, FLOAT8OID,
											  sizeof(float8), FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
}

Datum
int8_array(const int64 *v, int n)
{
	return eight_byte_array(v, n, INT8OID);
}

/* a text[] of n C strings */
Datum
cstring_text_array(char **v, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = CStringGetTextDatum(v[i]);
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

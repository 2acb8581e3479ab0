-- unlearn 0.6.0 -> 0.7.0: unlearn_score in C.  One scan of the table as
-- the caller, each row deformed once into a receiver that scores it, in
-- place of a PL/pgSQL query over unlearn._score_row.

\echo Use "ALTER EXTENSION unlearn UPDATE TO '0.7.0'" to load this file. \quit

CREATE OR REPLACE FUNCTION unlearn_score(model text, source regclass DEFAULT NULL)
RETURNS TABLE (key jsonb, label text, score float8)
AS 'MODULE_PATHNAME', 'unlearn_score_by_key' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION unlearn_score(text, regclass) IS 'the primary key (jsonb: each column''s text), predicted label and score of every row of a table (default: the model''s source) that the caller may read, in one scan';
DROP FUNCTION unlearn._score_row(text, record);

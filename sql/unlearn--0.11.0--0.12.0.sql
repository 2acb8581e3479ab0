-- unlearn 0.11.0 -> 0.12.0: a progress view.  unlearn.progress shows, for
-- every session training or re-anchoring a model now, its phase, the pass
-- over the table, the rows read and Newton's gradient norm, from shared
-- memory slots written by the library.
-- Progress of the training and re-anchoring running now, one row per
-- backend (src/progress.c), as pg_stat_progress_vacuum shows VACUUM.
CREATE FUNCTION unlearn._progress(OUT pid integer, OUT datid oid, OUT role oid,
	OUT model text, OUT relid oid, OUT command text, OUT phase text,
	OUT pass integer, OUT rows_done bigint, OUT rows_total bigint,
	OUT iteration integer, OUT classes integer, OUT classes_converged integer,
	OUT gradient_norm float8, OUT started timestamptz, OUT phase_started timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'unlearn_progress' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION unlearn._progress() IS 'the progress slots in shared memory: row-derived figures for the model owner''s roles only, the model, table, command, phase and times also for pg_read_all_stats, the pid and database for every role';
CREATE VIEW unlearn.progress AS
SELECT p.pid, d.datname, p.role::regrole AS role, p.model,
	   CASE WHEN d.datname = pg_catalog.current_database() THEN p.relid::regclass END AS source,
	   p.command, p.phase, p.pass, p.rows_done, p.rows_total,
	   round(100 * p.rows_done::numeric / nullif(p.rows_total, 0), 1) AS pct_pass,
	   p.iteration, p.classes, p.classes_converged, p.gradient_norm,
	   p.started, pg_catalog.clock_timestamp() - p.started AS elapsed, p.phase_started
FROM unlearn._progress() p
LEFT JOIN pg_catalog.pg_database d ON d.oid = p.datid;
GRANT SELECT ON unlearn.progress TO PUBLIC;
COMMENT ON VIEW unlearn.progress IS 'one line per session training, retraining or re-anchoring a model now: the phase, the pass over the table, the rows it has read, Newton''s iteration and gradient norm; the figures that depend on the rows are shown to the model owner''s roles only, the model, table, command, phase and times also to pg_read_all_stats, and the pid and database to every role';
COMMENT ON COLUMN unlearn.progress.command IS 'training (unlearn_train), retraining (unlearn_retrain, or a retrain after a change), re-anchoring, or class census (a model that releases nothing lists its classes)';
COMMENT ON COLUMN unlearn.progress.phase IS 'waiting for table lock, census, column moments, gradient and Hessian (a Newton pass), or Gram matrix';
COMMENT ON COLUMN unlearn.progress.rows_done IS 'rows of the model the current pass has read so far, counted by the backend and its parallel workers in batches of 1024 (none during the census)';
COMMENT ON COLUMN unlearn.progress.rows_total IS 'rows the model reflects, known after the census (the passes read exactly these)';
COMMENT ON COLUMN unlearn.progress.gradient_norm IS 'after each Newton pass: the largest gradient norm of the classes still iterating (of all classes once none is)';

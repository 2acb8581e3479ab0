-- The SQL interface as \df and \dx+ show it: the user's functions are the
-- unlearn_* functions, each documented; everything in schema unlearn is
-- machinery, marked internal in its comment.
-- every function of the extension has a comment
SELECT p.oid::regprocedure AS undocumented
FROM pg_proc p JOIN pg_depend e ON e.objid = p.oid AND e.deptype = 'e'
	AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'unlearn')
WHERE obj_description(p.oid, 'pg_proc') IS NULL;
-- the functions of schema unlearn say they are internal
SELECT p.oid::regprocedure AS not_marked_internal
FROM pg_proc p
WHERE p.pronamespace = 'unlearn'::regnamespace
	AND obj_description(p.oid, 'pg_proc') NOT LIKE 'internal%';
-- and none of the interface does
SELECT p.oid::regprocedure AS public_marked_internal
FROM pg_proc p JOIN pg_depend e ON e.objid = p.oid AND e.deptype = 'e'
	AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'unlearn')
WHERE p.pronamespace <> 'unlearn'::regnamespace
	AND obj_description(p.oid, 'pg_proc') LIKE 'internal%';
-- the interface: its functions' names, in the extension's schema
SELECT DISTINCT p.proname AS interface
FROM pg_proc p JOIN pg_depend e ON e.objid = p.oid AND e.deptype = 'e'
	AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'unlearn')
WHERE p.pronamespace <> 'unlearn'::regnamespace
ORDER BY 1;

# ALTER EXTENSION unlearn UPDATE from 0.1.0 (its install script as
# shipped) with trained models: after the update the models keep their
# weights, forget deleted rows (rebuilding their matrices, which 0.1.0 kept
# in unlogged blocks), stay certified, and the catalog equals a fresh
# install's (0.22.0, through 0.2.0 to 0.21.0).  The models are trained by
# the installed library on the 0.1.0 catalog, as between a package upgrade
# and the ALTER EXTENSION (there, without the training passes' functions,
# with the rows in memory).  Then the same from 0.3.0, 0.4.0, 0.5.0, 0.6.0,
# 0.7.0, 0.8.0, 0.9.0, 0.10.0, 0.11.0, 0.12.0, 0.13.0, 0.14.0, 0.15.0,
# 0.16.0, 0.17.0, 0.18.0, 0.19.0, 0.20.0 and 0.21.0.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('upgrade');
$node->start;

$node->safe_psql('postgres', "CREATE EXTENSION unlearn VERSION '0.1.0'");
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'unlearn'"),
	'0.1.0', 'installed at 0.1.0');
$node->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE ones (id int PRIMARY KEY, one boolean, pixels float8[]) PARTITION BY RANGE (id);
CREATE TABLE ones_low PARTITION OF ones FOR VALUES FROM (MINVALUE) TO (900);
CREATE TABLE ones_high PARTITION OF ones FOR VALUES FROM (900) TO (MAXVALUE);
INSERT INTO ones SELECT id, label = 1, pixels FROM digits WHERE label IN (1, 7);
SELECT model FROM unlearn_train('ones', 'ones', 'one', '{pixels}', sigma => 5);
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', sigma => 5);
DELETE FROM ones WHERE id IN (SELECT id FROM ones ORDER BY id LIMIT 3);
});
my $before = $node->safe_psql('postgres',
	"SELECT string_agg(model || md5(coef::text) || rows, ',' ORDER BY model) FROM unlearn.models");

$node->safe_psql('postgres', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'unlearn'"),
	'0.22.0', 'updated to 0.22.0 (through 0.2.0 to 0.21.0)');
is($node->safe_psql('postgres',
	"SELECT string_agg(model || md5(coef::text) || rows, ',' ORDER BY model) FROM unlearn.models"),
	$before, 'the models kept their weights');
is($node->safe_psql('postgres', "SELECT to_regclass('unlearn.model_blocks') IS NULL"), 't',
	'the block table is gone');

$node->safe_psql('postgres', 'DELETE FROM ones WHERE id IN (SELECT id FROM ones ORDER BY id LIMIT 2)');
$node->safe_psql('postgres', 'DELETE FROM digits WHERE id = 1');
is($node->safe_psql('postgres', q{
	SELECT string_agg(model || ':' || removed || ':' || retrains || ':' || (rows = CASE model
		WHEN 'ones' THEN (SELECT count(*) FROM ones) ELSE (SELECT count(*) FROM digits) END), ',' ORDER BY model)
	FROM unlearn.models}), 'digits:1:1:true,ones:5:1:true',
	'after the update, the first DELETE retrains each classifier, which takes its classes from the rows');
$node->safe_psql('postgres', 'DELETE FROM ones WHERE id IN (SELECT id FROM ones ORDER BY id LIMIT 2)');
$node->safe_psql('postgres', 'DELETE FROM digits WHERE id = 2');
is($node->safe_psql('postgres', q{
	SELECT string_agg(model || ':' || removed || ':' || retrains || ':' || (s.class_rows IS NOT NULL), ',' ORDER BY model)
	FROM unlearn.models JOIN unlearn.model_state s USING (model)}), 'digits:2:1:true,ones:7:1:true',
	'then DELETEs reach them without a retrain, counting rows per class');
is($node->safe_psql('postgres', q{SELECT bool_and(certified) FROM unlearn.models m, unlearn_verify(m.model)}),
	't', 'certified after the update');
is($node->safe_psql('postgres', 'SELECT bool_and(resident) FROM unlearn.status'), 't',
	'their matrices are resident again');
# the partition set survived the change of type: no repartition retrain
$node->safe_psql('postgres', 'ALTER TABLE ones ADD COLUMN note text');
is($node->safe_psql('postgres', "SELECT retrains FROM unlearn.models WHERE model = 'ones'"), '1',
	'the stored partition set still matches');

# the updated catalog is the fresh one
my $shape = q{
	SELECT string_agg(x, E'\n' ORDER BY x) FROM (
		SELECT c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
			|| CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
			|| coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') AS x
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE c.relnamespace = 'unlearn'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
		UNION ALL
		SELECT p.oid::regprocedure::text || ' ' || pg_get_function_result(p.oid) || ' '
			|| p.provolatile::text || ' ' || p.proparallel::text || ' ' || p.procost
			|| ' ' || coalesce(p.proacl::text, '')
		FROM pg_proc p JOIN pg_depend e ON e.objid = p.oid AND e.deptype = 'e'
			AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'unlearn')
		UNION ALL
		SELECT 'view ' || pg_get_viewdef('unlearn.status'::regclass)
		UNION ALL
		SELECT 'config ' || c.relname || ' ' || coalesce(x.cond, '')
		FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(rel, cond)
		JOIN pg_class c ON c.oid = x.rel WHERE e.extname = 'unlearn'
		UNION ALL
		SELECT 'grant ' || c.relname || ' ' || coalesce(c.relacl::text, '')
		FROM pg_class c WHERE c.relnamespace = 'unlearn'::regnamespace AND c.relkind IN ('r', 'v', 'S')
		UNION ALL
		SELECT 'policy ' || polname || ' ' || pg_get_expr(polqual, polrelid) FROM pg_policy
		UNION ALL
		SELECT 'options ' || c.relname || ' ' || c.relrowsecurity || ' ' || coalesce(c.reloptions::text, '')
		FROM pg_class c WHERE c.relnamespace = 'unlearn'::regnamespace AND c.relkind IN ('r', 'v')
	) s};
my $updated = $node->safe_psql('postgres', $shape);
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION unlearn');
is($updated, $node->safe_psql('fresh', $shape), 'the updated catalog equals a fresh install');

# models from before 0.3.0 keep no column map; a new training standardizes
is($node->safe_psql('postgres', q{SELECT string_agg(preprocess, ',') FROM unlearn.models}),
	'none,none', 'the models kept their row map (no column map)');
$node->safe_psql('postgres', q{SELECT unlearn_train('digits', 'digits', 'label', '{pixels}', sigma => 5, replace => true)});
is($node->safe_psql('postgres', q{
	SELECT preprocess || ':' || array_length(spread, 1) || ':' || (scale = sqrt(65))
	FROM unlearn.models WHERE model = 'digits'}), 'standardize:1:true', 'a new training standardizes');
$node->safe_psql('postgres', 'DELETE FROM digits WHERE id = 3');
is($node->safe_psql('postgres', q{SELECT certified FROM unlearn_verify('digits')}), 't',
	'and forgets with its map');

# 0.3.0 to 0.4.0: the library runs on the 0.3.0 catalog (no null policy,
# no rows per class) until the update, then keeps rows per class
$node->safe_psql('postgres', 'CREATE DATABASE from030');
$node->safe_psql('from030', "CREATE EXTENSION unlearn VERSION '0.3.0'");
$node->safe_psql('from030', $DIGITS_SQL . q{
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', sigma => 5);
DELETE FROM digits WHERE id <= 3;
INSERT INTO digits (label, pixels) SELECT label, pixels FROM digits WHERE id BETWEEN 10 AND 12;
});
is($node->safe_psql('from030', q{
	SELECT m.rows = (SELECT count(*) FROM digits) AND m.removed = 3 AND m.inserted = 3 AND m.retrains = 0
		AND v.certified
	FROM unlearn.models m, unlearn_verify(m.model) v}), 't',
	'on the 0.3.0 catalog, the library forgets and stays certified');
$node->safe_psql('from030', 'ALTER EXTENSION unlearn UPDATE');
$node->safe_psql('from030', 'DELETE FROM digits WHERE id = 4');
$node->safe_psql('from030', 'DELETE FROM digits WHERE id = 5');
is($node->safe_psql('from030', q{
	SELECT m.retrains || ':' || m.skipped || ':' || m.nulls || ':'
		|| (s.class_rows = (SELECT array_agg(n ORDER BY label) FROM (SELECT label, count(*) AS n FROM digits GROUP BY label) c))
		|| ':' || v.certified
	FROM unlearn.models m JOIN unlearn.model_state s USING (model), unlearn_verify(m.model) v}),
	'1:0:error:true:true', 'after ALTER EXTENSION UPDATE, one retrain takes the classes and counts them');
is($node->safe_psql('from030', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.3.0 equals a fresh install');

# 0.4.0 to 0.5.0: on the 0.4.0 catalog (no grants) only owners read a
# model; after the update, reads follow the grants
$node->safe_psql('postgres', 'CREATE DATABASE from040');
$node->safe_psql('from040', "CREATE EXTENSION unlearn VERSION '0.4.0'");
$node->safe_psql('from040', $DIGITS_SQL . q{
CREATE ROLE analyst;
GRANT SELECT, DELETE ON digits TO analyst;
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', sigma => 5);
DELETE FROM digits WHERE id <= 3;
});
my ($rc, $out, $err) = $node->psql('from040',
	q{SET ROLE analyst; SELECT unlearn_predict('digits', pixels) FROM digits LIMIT 1});
like($err, qr/permission denied for model "digits"/,
	'on the 0.4.0 catalog, the library lets only the owner predict');
$node->safe_psql('from040', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from040', q{
	SET ROLE analyst;
	SELECT count(*) FROM unlearn.models UNION ALL SELECT count(*) FROM unlearn.status
	UNION ALL SELECT count(*) FROM unlearn.ledger}), "0\n0\n0",
	'after the update, a role without a grant sees no catalog row of the model');
$node->safe_psql('from040', q{SELECT unlearn_grant('digits', 'analyst')});
is($node->safe_psql('from040', q{
	SET ROLE analyst;
	DELETE FROM digits WHERE id = 4;
	SELECT count(*) = (SELECT count(*) FROM digits) FROM digits WHERE unlearn_predict('digits', pixels) >= 0
	UNION ALL SELECT (SELECT rows FROM unlearn.status) = (SELECT count(*) FROM digits)}), "t\nt",
	'a granted role predicts and reads the status');
is($node->safe_psql('from040', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.4.0 equals a fresh install');

# 0.5.0 to 0.6.0: on the 0.5.0 catalog (no expressions column) models of
# columns train and forget, a feature expression is refused with a hint;
# after the update, expressions train and forget
$node->safe_psql('postgres', 'CREATE DATABASE from050');
$node->safe_psql('from050', "CREATE EXTENSION unlearn VERSION '0.5.0'");
$node->safe_psql('from050', $DIGITS_SQL . q{
CREATE TABLE sums AS SELECT id, pixels[10] AS a, pixels[20] AS b, pixels[30] + 2 * pixels[40] AS y FROM digits;
SELECT model FROM unlearn_train('sums', 'sums', 'y', '{a,b}', loss => 'squared', sigma => 0);
DELETE FROM sums WHERE id <= 3;
});
($rc, $out, $err) = $node->psql('from050',
	q{SELECT unlearn_train('sums_x', 'sums', 'y', '{a,a * b}', loss => 'squared', sigma => 0)});
like($err, qr/feature expressions need version 0.6.0 of the unlearn catalog/,
	'on the 0.5.0 catalog, a feature expression is refused');
$node->safe_psql('from050', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from050', q{
	SELECT model FROM unlearn_train('sums_x', 'sums', 'y', '{a,a * b}', loss => 'squared', sigma => 0);
	DELETE FROM sums WHERE id BETWEEN 4 AND 6;
	SELECT string_agg(model || ':' || coalesce(expressions::text, 'columns') || ':' || (rows = (SELECT count(*) FROM sums))
					  || ':' || v.certified, ',' ORDER BY model)
	FROM unlearn.models m, unlearn_verify(m.model) v}),
	"sums_x
sums:columns:true:true,sums_x:{f,t}:true:true",
	'after the update, models of columns and of expressions forget and stay certified');
is($node->safe_psql('from050', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.5.0 equals a fresh install');

# 0.6.0 to 0.7.0: the 0.6.0 catalog's unlearn_score (PL/pgSQL over
# unlearn._score_row) runs on the new library; after the update the C
# unlearn_score returns the same rows
$node->safe_psql('postgres', 'CREATE DATABASE from060');
$node->safe_psql('from060', "CREATE EXTENSION unlearn VERSION '0.6.0'");
$node->safe_psql('from060', $DIGITS_SQL . q{
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', sigma => 1);
DELETE FROM digits WHERE id <= 3;
});
my $scores = q{SELECT md5(string_agg(key::text || label || score, ',' ORDER BY (key->>'id')::int))
	FROM unlearn_score('digits')};
my $scores060 = $node->safe_psql('from060', $scores);
$node->safe_psql('from060', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from060', $scores), $scores060,
	'after the update, unlearn_score in C returns what the 0.6.0 catalog returned');
is($node->safe_psql('from060', q{SELECT l.lanname
	FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.proname = 'unlearn_score'}), 'c',
	'unlearn_score is a C function');
is($node->safe_psql('from060', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.6.0 equals a fresh install');

# 0.7.0 to 0.8.0: on the 0.7.0 catalog, which has no per-row scorer, the
# new library's unlearn_score scores in the backend even when the plan has
# workers; after the update it scores in the workers, with the same rows
$node->safe_psql('postgres', 'CREATE DATABASE from070');
$node->safe_psql('from070', "CREATE EXTENSION unlearn VERSION '0.7.0'");
$node->safe_psql('from070', $DIGITS_SQL . q{
SELECT model FROM unlearn_train('digits', 'digits', 'label', '{pixels}', sigma => 1);
DELETE FROM digits WHERE id <= 3;
});
my $parallel = q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
	SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET client_min_messages = debug1;
	SELECT count(*) FROM unlearn_score('digits');};
my $debug_out;
$node->psql('from070', $parallel, stdout => \$debug_out, stderr => \$err);
like($err, qr/scores in this backend/, 'on the 0.7.0 catalog, unlearn_score scores in the backend');
my $scores070 = $node->safe_psql('from070', $scores);
$node->safe_psql('from070', 'ALTER EXTENSION unlearn UPDATE');
$node->psql('from070', $parallel, stdout => \$debug_out, stderr => \$err);
like($err, qr/scores in parallel workers/, 'after the update, it scores in parallel workers');
is($node->safe_psql('from070', "SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
	SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; $scores"), $scores070,
	'with the same rows');
is($node->safe_psql('from070', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.7.0 equals a fresh install');

# 0.8.0 to 0.9.0: the 0.8.0 catalog cannot say that classes were declared,
# so the new library takes a boolean model's classes from its rows there;
# after the update that model goes on so, and a new training declares them
$node->safe_psql('postgres', 'CREATE DATABASE from080');
$node->safe_psql('from080', "CREATE EXTENSION unlearn VERSION '0.8.0'");
$node->safe_psql('from080', $DIGITS_SQL . q{
CREATE TABLE threes AS SELECT id, label = 3 AS three, pixels FROM digits;
ALTER TABLE threes ADD PRIMARY KEY (id);
CREATE TABLE sevens AS SELECT id, label = 7 AS seven, pixels FROM digits;
ALTER TABLE sevens ADD PRIMARY KEY (id);
SELECT model FROM unlearn_train('threes', 'threes', 'three', '{pixels}', sigma => 100);
});
$node->safe_psql('from080', 'ALTER EXTENSION unlearn UPDATE');
$node->safe_psql('from080', q{
SELECT model FROM unlearn_train('sevens', 'sevens', 'seven', '{pixels}', sigma => 100);
DELETE FROM threes WHERE three;
DELETE FROM sevens WHERE seven;
});
is($node->safe_psql('from080', q{
	SELECT string_agg(model || ':' || classes_declared || ':' || classes::text || ':' || state, ',' ORDER BY model)
	FROM unlearn.models}), 'sevens:true:{false,true}:ready,threes:false:{false}:too few rows',
	'after the update, the model trained before takes its classes from the rows, and a new one declares them');
is($node->safe_psql('from080', q{SELECT certified FROM unlearn_verify('sevens')}), 't',
	'the new one stays certified');
is($node->safe_psql('from080', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.8.0 equals a fresh install');

# 0.9.0 to 0.10.0: the 0.9.0 catalog has no row functions for training
# passes, so the new library trains and re-anchors there with the rows in
# memory; after the update, by passes, and both models stay certified
$node->safe_psql('postgres', 'CREATE DATABASE from090');
$node->safe_psql('from090', "CREATE EXTENSION unlearn VERSION '0.9.0'");
$node->safe_psql('from090', $DIGITS_SQL . q{
CREATE TABLE fours AS SELECT id, label = 4 AS four, pixels FROM digits;
ALTER TABLE fours ADD PRIMARY KEY (id);
SELECT model FROM unlearn_train('fours', 'fours', 'four', '{pixels}', sigma => 100);
DELETE FROM fours WHERE id % 10 = 0;
SELECT model FROM unlearn_retrain('fours');
});
is($node->safe_psql('from090', q{SELECT (rows = (SELECT count(*) FROM fours)) || ':' || state FROM unlearn.models WHERE model = 'fours'}),
	'true:ready', 'on the 0.9.0 catalog the new library trains and retrains with the rows in memory');
$node->safe_psql('from090', 'ALTER EXTENSION unlearn UPDATE');
$node->safe_psql('from090', q{
SELECT model FROM unlearn_retrain('fours');
DELETE FROM fours WHERE id % 10 = 1;
});
is($node->safe_psql('from090', q{SELECT (rows = (SELECT count(*) FROM fours)) || ':' || certified FROM unlearn.models, unlearn_verify('fours') WHERE model = 'fours'}),
	'true:true', 'after the update it retrains by passes and stays certified');
is($node->safe_psql('from090', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.9.0 equals a fresh install');

# 0.10.0 to 0.11.0: the 0.10.0 catalog has no queue, so its models apply
# their changes immediately; after the update they still do, and a new
# model can defer its removals
$node->safe_psql('postgres', 'CREATE DATABASE from0100');
$node->safe_psql('from0100', "CREATE EXTENSION unlearn VERSION '0.10.0'");
$node->safe_psql('from0100', $DIGITS_SQL . q{
CREATE TABLE sixes AS SELECT id, label = 6 AS six, pixels FROM digits;
ALTER TABLE sixes ADD PRIMARY KEY (id);
SELECT model FROM unlearn_train('sixes', 'sixes', 'six', '{pixels}', sigma => 100);
DELETE FROM sixes WHERE id % 10 = 0;
});
is($node->safe_psql('from0100', q{SELECT (rows = (SELECT count(*) FROM sixes)) || ':' || state FROM unlearn.models WHERE model = 'sixes'}),
	'true:ready', 'on the 0.10.0 catalog the new library applies changes immediately');
$node->safe_psql('from0100', 'ALTER EXTENSION unlearn UPDATE');
$node->safe_psql('from0100', q{
DELETE FROM sixes WHERE id % 10 = 1;
SELECT model FROM unlearn_train('sixes_later', 'sixes', 'six', '{pixels}', sigma => 100, options => '{"removal": "deferred"}');
DELETE FROM sixes WHERE id % 10 = 2;
SELECT model FROM unlearn_apply_pending('sixes_later');
});
is($node->safe_psql('from0100', q{
SELECT string_agg(model || ':' || removal || ':' || (rows = (SELECT count(*) FROM sixes)) || ':' || pending, ','
	ORDER BY model) FROM unlearn.status}),
	'sixes:immediate:true:0,sixes_later:deferred:true:0', 'after the update both removals keep the models exact');
is($node->safe_psql('from0100', q{SELECT bool_and(certified) FROM unlearn.models m, unlearn_verify(m.model)}),
	't', 'and certified');
is($node->safe_psql('from0100', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.10.0 equals a fresh install');

# 0.11.0 to 0.12.0: the 0.11.0 catalog has no progress view; the new
# library trains on it (its slots unread), and after the update the view
# answers
$node->safe_psql('postgres', 'CREATE DATABASE from0110');
$node->safe_psql('from0110', "CREATE EXTENSION unlearn VERSION '0.11.0'");
$node->safe_psql('from0110', $DIGITS_SQL . q{
CREATE TABLE twos AS SELECT id, label = 2 AS two, pixels FROM digits;
ALTER TABLE twos ADD PRIMARY KEY (id);
SELECT model FROM unlearn_train('twos', 'twos', 'two', '{pixels}', sigma => 100);
DELETE FROM twos WHERE id % 10 = 0;
});
is($node->safe_psql('from0110', q{SELECT (rows = (SELECT count(*) FROM twos)) || ':' || state FROM unlearn.models WHERE model = 'twos'}),
	'true:ready', 'on the 0.11.0 catalog the new library trains and applies changes');
$node->safe_psql('from0110', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from0110', q{SELECT count(*) FROM unlearn.progress}), '0',
	'after the update the progress view answers, with no work running');
is($node->safe_psql('from0110', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.11.0 equals a fresh install');

# 0.12.0 to 0.13.0: the 0.12.0 catalog has no gradient-only pass; the new
# library trains on it with the Hessian in every pass, and after the update
# with gradient-only passes where the Hessian would not be used: the same
# model, to Newton's tolerance
$node->safe_psql('postgres', 'CREATE DATABASE from0120');
$node->safe_psql('from0120', "CREATE EXTENSION unlearn VERSION '0.12.0'");
$node->safe_psql('from0120', $DIGITS_SQL . q{
CREATE TABLE threes AS SELECT id, label = 3 AS three, pixels FROM digits;
ALTER TABLE threes ADD PRIMARY KEY (id);
});
my ($train_out, $passes_before, $passes_after);
$node->psql('from0120',
	q{SELECT model FROM unlearn_train('before', 'threes', 'three', '{pixels}', sigma => 0, verbose => true)},
	stdout => \$train_out, stderr => \$passes_before, on_error_die => 1);
like($passes_before, qr/pass \d+ \(gradient and Hessian\)/, 'on the 0.12.0 catalog the passes take the Hessian');
unlike($passes_before, qr/pass \d+ \(gradient\)/, 'and none takes the gradient alone');
$node->safe_psql('from0120', 'ALTER EXTENSION unlearn UPDATE');
$node->psql('from0120',
	q{SELECT model FROM unlearn_train('after', 'threes', 'three', '{pixels}', sigma => 0, verbose => true)},
	stdout => \$train_out, stderr => \$passes_after, on_error_die => 1);
like($passes_after, qr/pass \d+ \(gradient\)/, 'after the update the last passes take the gradient alone');
is($node->safe_psql('from0120', q{
SELECT max(abs(a - b)) < 1e-6 FROM unlearn.models x, unlearn.models y,
	unnest(x.coef, y.coef) AS u(a, b) WHERE x.model = 'before' AND y.model = 'after'}),
	't', 'the model trained with gradient-only passes equals the one trained without');
is($node->safe_psql('from0120', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.12.0 equals a fresh install');

# 0.13.0 to 0.14.0: the row functions declare their cost, so that the
# planner gives a gradient-only pass over a table of some thousands of rows
# parallel workers; the 0.13.0 catalog plans it in one process
my $gradient_pass = q{
EXPLAIN (COSTS OFF) SELECT unlearn._pass_gradient(
	unlearn._row_x('m', '{8,1,2,3,1,1,0,1}', unlearn._row_values(x)), 1, '{0,0,0,0,0,0,0,0,0}', 'logistic')
FROM wide};
$node->safe_psql('postgres', 'CREATE DATABASE from0130');
$node->safe_psql('from0130', "CREATE EXTENSION unlearn VERSION '0.13.0'");
$node->safe_psql('from0130', q{
CREATE TABLE wide AS SELECT i AS id, array_fill(i::float8, '{8}') AS x FROM generate_series(1, 20000) i;
ANALYZE wide;
ALTER DATABASE from0130 SET min_parallel_table_scan_size = 0;
});
unlike($node->safe_psql('from0130', $gradient_pass), qr/Gather/,
	'on the 0.13.0 catalog a gradient-only pass over 20,000 rows runs in one process');
$node->safe_psql('from0130', 'ALTER EXTENSION unlearn UPDATE');
like($node->safe_psql('from0130', $gradient_pass), qr/Gather.*Partial Aggregate/s,
	'after the update it is planned with parallel workers');
is($node->safe_psql('from0130', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.13.0 equals a fresh install');

# 0.14.0 to 0.15.0: nulls => 'skip' is the default, and the DDL event
# trigger sees CREATE TRIGGER and ALTER TRIGGER, so that renaming an
# extension trigger is refused (on 0.14.0 it went through)
my $rename = q{ALTER TRIGGER unlearn_after_delete ON t RENAME TO parked};
$node->safe_psql('postgres', 'CREATE DATABASE from0140');
$node->safe_psql('from0140', "CREATE EXTENSION unlearn VERSION '0.14.0'");
$node->safe_psql('from0140', q{
CREATE TABLE t AS SELECT g AS id, g % 2 = 0 AS y, sin(g) AS a FROM generate_series(1, 50) g;
SELECT 1 FROM unlearn_train('m', 't', 'y', '{a}', sigma => 5);
});
$node->safe_psql('from0140', 'BEGIN; ' . $rename . '; ROLLBACK');
$node->safe_psql('from0140', 'ALTER EXTENSION unlearn UPDATE');
my (undef, undef, $rename_err) = $node->psql('from0140', $rename);
like($rename_err, qr/cannot take or leave a name of the unlearn triggers/,
	'after the update renaming an extension trigger is refused');
$node->safe_psql('from0140', "SELECT unlearn_drop('m'); INSERT INTO t VALUES (51, NULL, 1)");
is($node->safe_psql('from0140', q{SELECT 1 FROM unlearn_train('n', 't', 'y', '{a}', sigma => 5);
	SELECT nulls || skipped FROM unlearn.models WHERE model = 'n'}), "1\nimpute1",
	'after the update a model imputes by default and leaves the row with a null label out');
is($node->safe_psql('from0140', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.14.0 equals a fresh install');

# 0.15.0 to 0.16.0: every function in schema unlearn is marked internal,
# with the comments of a fresh install
my $comments = q{
SELECT string_agg(p.oid::regprocedure::text || ': ' || coalesce(obj_description(p.oid, 'pg_proc'), ''),
				  E'\n' ORDER BY p.oid::regprocedure::text)
FROM pg_proc p JOIN pg_depend e ON e.objid = p.oid AND e.deptype = 'e'
	AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'unlearn')};
my $not_internal = q{
SELECT count(*) FROM pg_proc
WHERE pronamespace = 'unlearn'::regnamespace
	AND coalesce(obj_description(oid, 'pg_proc'), '') NOT LIKE 'internal%'};
$node->safe_psql('postgres', 'CREATE DATABASE from0150');
$node->safe_psql('from0150', "CREATE EXTENSION unlearn VERSION '0.15.0'");
isnt($node->safe_psql('from0150', $not_internal), '0',
	'on 0.15.0 some functions of schema unlearn are not marked internal');
$node->safe_psql('from0150', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from0150', $not_internal), '0',
	'after the update every function of schema unlearn is marked internal');
is($node->safe_psql('from0150', $comments), $node->safe_psql('fresh', $comments),
	'the comments updated from 0.15.0 equal a fresh install');
is($node->safe_psql('from0150', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.15.0 equals a fresh install');

# 0.16.0 to 0.17.0: unlearn_train takes its rarely changed settings as
# options => jsonb; a model trained with the 0.16.0 signature keeps its
# settings, and the old signature is gone
my $train_signature = q{
SELECT string_agg(pg_get_function_identity_arguments(oid), '; ')
FROM pg_proc WHERE proname = 'unlearn_train'};
$node->safe_psql('postgres', 'CREATE DATABASE from0160');
$node->safe_psql('from0160', "CREATE EXTENSION unlearn VERSION '0.16.0'");
$node->safe_psql('from0160', q{
CREATE TABLE t (id int PRIMARY KEY, y boolean, a float8);
INSERT INTO t SELECT i, i % 3 = 0, i % 7 FROM generate_series(1, 60) i;
SELECT 1 FROM unlearn_train('old', 't', 'y', '{a}', sigma => 5, nulls => 'error', bound => 'exact');
});
$node->safe_psql('from0160', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from0160', $train_signature), $node->safe_psql('fresh', $train_signature),
	'after the update unlearn_train has the signature of a fresh install');
like($node->safe_psql('from0160', $train_signature), qr/options jsonb/,
	'which takes options jsonb');
is($node->safe_psql('from0160', q{
SELECT 1 FROM unlearn_train('new', 't', 'y', '{a}', sigma => 5, options => '{"nulls": "error", "bound": "exact"}');
SELECT string_agg(model || ':' || nulls || ':' || bound, ',' ORDER BY model) FROM unlearn.models}),
	"1\nnew:error:exact,old:error:exact",
	'options set what the old named arguments set');
is($node->safe_psql('from0160', $comments), $node->safe_psql('fresh', $comments),
	'the comments updated from 0.16.0 equal a fresh install');
is($node->safe_psql('from0160', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.16.0 equals a fresh install');

# 0.17.0 to 0.18.0: models gain a mechanism ('newton' for those there
# were), Noisy-GD models train on the updated catalog, and unlearn_privacy
# reads both
$node->safe_psql('postgres', 'CREATE DATABASE from0170');
$node->safe_psql('from0170', "CREATE EXTENSION unlearn VERSION '0.17.0'");
$node->safe_psql('from0170', q{
CREATE TABLE t (id int PRIMARY KEY, y boolean, a float8);
INSERT INTO t SELECT i, i % 3 = 0, i % 7 FROM generate_series(1, 60) i;
SELECT 1 FROM unlearn_train('old', 't', 'y', '{a}', sigma => 5);
DELETE FROM t WHERE id = 1;
});
my $old_weights = $node->safe_psql('from0170', "SELECT md5(coef::text) FROM unlearn.models");
$node->safe_psql('from0170', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from0170', "SELECT mechanism || ':' || md5(coef::text) FROM unlearn.models"),
	"newton:$old_weights", 'a model of 0.17.0 is a Newton model with its weights');
is($node->safe_psql('from0170', q{
DELETE FROM t WHERE id = 2;
SELECT 1 FROM unlearn_train('gd', 't', 'y', '{a}', mechanism => 'noisy_gd');
DELETE FROM t WHERE id = 3;
SELECT string_agg(model || ':' || mechanism || ':' || rows, ',' ORDER BY model) FROM unlearn.status}),
	"1
gd:noisy_gd:57,old:newton:57", 'both mechanisms follow the table after the update');
is($node->safe_psql('from0170', "SELECT (SELECT mechanism FROM unlearn_privacy('gd')) || ',' || (SELECT mechanism FROM unlearn_privacy('old'))"),
	'noisy_gd,newton', 'unlearn_privacy reads both');
is($node->safe_psql('from0170', $train_signature), $node->safe_psql('fresh', $train_signature),
	'after the update unlearn_train has the signature of a fresh install');
is($node->safe_psql('from0170', $comments), $node->safe_psql('fresh', $comments),
	'the comments updated from 0.17.0 equal a fresh install');
is($node->safe_psql('from0170', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.17.0 equals a fresh install');

# 0.18.0 to 0.19.0: models gain a cohort column (none for those there
# were), unlearn.cohorts appears, and a model with cohorts trains and
# erases a cohort on the updated catalog
$node->safe_psql('postgres', 'CREATE DATABASE from0180');
$node->safe_psql('from0180', "CREATE EXTENSION unlearn VERSION '0.18.0'");
$node->safe_psql('from0180', q{
CREATE TABLE t (id int PRIMARY KEY, tenant int, y boolean, a float8);
INSERT INTO t SELECT i, i % 4, i % 3 = 0, i % 7 FROM generate_series(1, 80) i;
SELECT 1 FROM unlearn_train('old', 't', 'y', '{a}', sigma => 5);
DELETE FROM t WHERE id = 1;
});
$old_weights = $node->safe_psql('from0180', "SELECT md5(coef::text) FROM unlearn.models");
$node->safe_psql('from0180', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from0180', "SELECT coalesce(cohort, 'none') || ':' || md5(coef::text) FROM unlearn.models"),
	"none:$old_weights", 'a model of 0.18.0 has no cohorts and keeps its weights');
is($node->safe_psql('from0180', q{
SELECT 1 FROM unlearn_train('co', 't', 'y', '{a}', sigma => 5, cohort => 'tenant');
DELETE FROM t WHERE tenant = 2;
SELECT string_agg(model || ':' || rows, ',' ORDER BY model) FROM unlearn.status}),
	"1
co:59,old:59", 'both models follow the table after the update');
is($node->safe_psql('from0180', "SELECT operation FROM unlearn.ledger WHERE model = 'co' ORDER BY id DESC LIMIT 1"),
	'cohort', 'the model with cohorts erased one from its statistics');
is($node->safe_psql('from0180', $train_signature), $node->safe_psql('fresh', $train_signature),
	'after the update unlearn_train has the signature of a fresh install');
is($node->safe_psql('from0180', $comments), $node->safe_psql('fresh', $comments),
	'the comments updated from 0.18.0 equal a fresh install');
is($node->safe_psql('from0180', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.18.0 equals a fresh install');

# 0.19.0 to 0.20.0: models gain the noise (gaussian for those there
# were), nats and nats_spent, the state gains weights and release_scale,
# the ledger nats; a fisher model and a laplace model train and forget on
# the updated catalog
$node->safe_psql('postgres', 'CREATE DATABASE from0190');
$node->safe_psql('from0190', "CREATE EXTENSION unlearn VERSION '0.19.0'");
$node->safe_psql('from0190', q{
CREATE TABLE t (id int PRIMARY KEY, y boolean, a float8, b float8);
INSERT INTO t SELECT i, i % 3 = 0, i % 7, i % 5 FROM generate_series(1, 80) i;
SELECT 1 FROM unlearn_train('old', 't', 'y', '{a,b}', sigma => 5);
DELETE FROM t WHERE id = 1;
});
$old_weights = $node->safe_psql('from0190', "SELECT md5(coef::text) FROM unlearn.models");
$node->safe_psql('from0190', 'ALTER EXTENSION unlearn UPDATE');
is($node->safe_psql('from0190', "SELECT noise || ':' || md5(coef::text) || ':' || coalesce(nats::text, 'none') FROM unlearn.models"),
	"gaussian:$old_weights:none", 'a model of 0.19.0 has gaussian noise, no nats, and keeps its weights');
is($node->safe_psql('from0190', q{
SELECT 1 FROM unlearn_train('fisher', 't', 'y', '{a,b}', mechanism => 'fisher');
SELECT 1 FROM unlearn_train('laplace', 't', 'y', '{a,b}', sigma => 5, noise => 'laplace');
DELETE FROM t WHERE id = 2;
SELECT string_agg(model || ':' || rows || ':' || guarantee, ',' ORDER BY model) FROM unlearn.status}),
	"1
1
fisher:78:1 nats per release,laplace:78:1-certified removal (pure, delta = 0),old:78:(1, 0.0001)-certified removal",
	'the models follow the table after the update');
is($node->safe_psql('from0190', q{SELECT bool_and(certified) FROM unlearn.models m, unlearn_verify(m.model)}),
	't', 'certified after the update');
is($node->safe_psql('from0190', "SELECT nats > 0 FROM unlearn.ledger WHERE model = 'fisher' ORDER BY id DESC LIMIT 1"),
	't', 'the fisher model published a release with its nats');
is($node->safe_psql('from0190', $train_signature), $node->safe_psql('fresh', $train_signature),
	'after the update unlearn_train has the signature of a fresh install');
is($node->safe_psql('from0190', $comments), $node->safe_psql('fresh', $comments),
	'the comments updated from 0.19.0 equal a fresh install');
is($node->safe_psql('from0190', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.19.0 equals a fresh install');

# 0.20.0 to 0.21.0: training passes read a category() group with
# unlearn._category_values; a model trained on 0.20.0, one expression per
# category, retrains to the same bits (one process: the sums' order is
# fixed)
$node->safe_psql('postgres', 'CREATE DATABASE from0200');
$node->safe_psql('from0200', "CREATE EXTENSION unlearn VERSION '0.20.0'");
$node->safe_psql('from0200', q{
CREATE TABLE t (id int PRIMARY KEY, region text, y float8);
INSERT INTO t SELECT i, (ARRAY['north', 'south', 'east', NULL, 'moon'])[i % 5 + 1], (i % 5) * 1.5 + sin(i)
FROM generate_series(1, 300) i;
SELECT 1 FROM unlearn_train('cat', 't', 'y', ARRAY['category(region, ''{north,south,east}'')'],
							loss => 'squared', sigma => 0);
});
$old_weights = $node->safe_psql('from0200', "SELECT coef::text FROM unlearn.models");
$node->safe_psql('from0200', 'ALTER EXTENSION unlearn UPDATE');
my ($retrained, $debug);
$node->psql('from0200', q{
SET max_parallel_workers_per_gather = 0;
SET client_min_messages = debug1;
SELECT 1 FROM unlearn_retrain('cat');
SELECT coef::text FROM unlearn.models}, stdout => \$retrained, stderr => \$debug);
is($retrained, "1\n$old_weights", 'a category model of 0.20.0 retrains on 0.21.0 to the same weights');
like($debug, qr/model "cat": features 1 to 4 read as one category\(\) group/,
	'the retraining read the category group in one lookup');
is($node->safe_psql('from0200', $train_signature), $node->safe_psql('fresh', $train_signature),
	'after the update unlearn_train has the signature of a fresh install');
is($node->safe_psql('from0200', $comments), $node->safe_psql('fresh', $comments),
	'the comments updated from 0.20.0 equal a fresh install');
is($node->safe_psql('from0200', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.20.0 equals a fresh install');

# 0.21.0 to 0.22.0: category(column) takes its categories from the rows
# (unlearn.models.taken_categories); refused before the update, with a
# hint, while models with declared categories go on
$node->safe_psql('postgres', 'CREATE DATABASE from0210');
$node->safe_psql('from0210', "CREATE EXTENSION unlearn VERSION '0.21.0'");
$node->safe_psql('from0210', q{
CREATE TABLE t (id int PRIMARY KEY, region text, y float8);
INSERT INTO t SELECT i, (ARRAY['north', 'south', 'east', NULL])[i % 4 + 1], (i % 4) * 1.5 + sin(i)
FROM generate_series(1, 300) i;
SELECT 1 FROM unlearn_train('cat', 't', 'y', ARRAY['category(region, ''{east,north,south}'')'],
							loss => 'squared', sigma => 0);
});
($rc, $out, $err) = $node->psql('from0210',
	"SELECT 1 FROM unlearn_train('taken', 't', 'y', '{category(region)}', loss => 'squared', sigma => 0)");
like($err, qr/categories taken from the rows need version 0\.22\.0 of the unlearn catalog/,
	'before the update, categories taken from the rows are refused');
$node->safe_psql('from0210', 'ALTER EXTENSION unlearn UPDATE');
$node->safe_psql('from0210', q{
SELECT 1 FROM unlearn_train('taken', 't', 'y', '{category(region)}', loss => 'squared', sigma => 0);
DELETE FROM t WHERE region = 'east';
});
is($node->safe_psql('from0210', q{
	SELECT dims || ':' || retrains FROM unlearn.models WHERE model = 'taken'}),
	'3:1', 'after the update, a taken category that loses its rows retrains the model without it');
is($node->safe_psql('from0210', $train_signature), $node->safe_psql('fresh', $train_signature),
	'after the update unlearn_train has the signature of a fresh install');
is($node->safe_psql('from0210', $comments), $node->safe_psql('fresh', $comments),
	'the comments updated from 0.21.0 equal a fresh install');
is($node->safe_psql('from0210', $shape), $node->safe_psql('fresh', $shape),
	'the catalog updated from 0.21.0 equals a fresh install');

$node->stop;
done_testing();

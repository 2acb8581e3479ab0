# Erasure residue in raw pages: after a DELETE commits, the previous
# version of the released coefficients (from which, with the current ones,
# something of the deleted row can be learnt) is in the pages of the
# extension's relations until the README's procedure runs: VACUUM FULL of
# unlearn.models and unlearn.model_state.  (The Hessian factor is in no
# relation: shared memory only.)  Checked byte by byte with pageinspect's
# get_raw_page over every page of every relation of schema unlearn
# (tables, TOAST tables, indexes), not through any tuple-level reader.
# The same for a cohort erased whole: its value and its statistics.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('raw_pages');
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION unlearn; CREATE EXTENSION pageinspect');
$node->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE ones AS SELECT id, label = 1 AS one, pixels FROM digits WHERE label IN (1, 7);
SELECT model FROM unlearn_train('ones', 'ones', 'one', '{pixels}', sigma => 1);
-- pages of every relation of schema unlearn holding a byte pattern
CREATE FUNCTION pages_holding(pattern bytea) RETURNS bigint LANGUAGE sql AS $$
	WITH rels AS (
		SELECT c.oid FROM pg_class c
		WHERE c.relnamespace = 'unlearn'::regnamespace AND c.relkind IN ('r', 'i', 't')
		UNION
		SELECT c.reltoastrelid FROM pg_class c
		WHERE c.relnamespace = 'unlearn'::regnamespace AND c.reltoastrelid <> 0
		UNION
		SELECT i.indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
		WHERE c.relnamespace = 'unlearn'::regnamespace OR c.oid IN
			(SELECT reltoastrelid FROM pg_class WHERE relnamespace = 'unlearn'::regnamespace))
	SELECT count(*) FROM rels r,
		generate_series(0, pg_relation_size(r.oid) / current_setting('block_size')::int - 1) b
	WHERE position(pattern IN get_raw_page(r.oid::regclass::text, 'main', b)) > 0
$$;
});

# the bytes, as stored, of three released coefficients (float8 array
# elements are in the server's byte order; this machine is little-endian)
my @coef = split /,/, $node->safe_psql('postgres',
	"SET extra_float_digits = 3; SELECT array_to_string(coef[20:22], ',') FROM unlearn.models WHERE model = 'ones'");
my $coef_pattern = '\\x' . join('', map { unpack('H*', pack('d<', $_)) } @coef);

cmp_ok($node->safe_psql('postgres', "SELECT pages_holding('$coef_pattern')"), '>', 0,
	'the scan finds the live coefficients');

# erase one row
$node->safe_psql('postgres', 'DELETE FROM ones WHERE id = (SELECT min(id) FROM ones WHERE one)');
is($node->safe_psql('postgres', "SELECT count(*) FROM unlearn.models WHERE model = 'ones' AND removed = 1"),
	'1', 'the model removed the row');
is($node->safe_psql('postgres', "SELECT count(*) FROM unlearn.models WHERE model = 'ones' AND coef[20:22] = '{"
	. join(',', @coef) . "}'::float8[]"), '0', 'the released coefficients changed');
cmp_ok($node->safe_psql('postgres', "SELECT pages_holding('$coef_pattern')"), '>', 0,
	'before the procedure: the previous coefficients are in a raw page');

# the README's procedure
$node->safe_psql('postgres', 'VACUUM ones');
$node->safe_psql('postgres', 'VACUUM FULL unlearn.models, unlearn.model_state');
is($node->safe_psql('postgres', "SELECT pages_holding('$coef_pattern')"), '0',
	'after VACUUM FULL: no page of the extension holds the previous coefficients');
my @live = split /,/, $node->safe_psql('postgres',
	"SET extra_float_digits = 3; SELECT array_to_string(coef[20:22], ',') FROM unlearn.models WHERE model = 'ones'");
my $live_pattern = '\\x' . join('', map { unpack('H*', pack('d<', $_)) } @live);
cmp_ok($node->safe_psql('postgres', "SELECT pages_holding('$live_pattern')"), '>', 0,
	'the scan still finds the live coefficients');
is($node->safe_psql('postgres', q{SELECT certified FROM unlearn_verify('ones')}), 't',
	'the model is intact after VACUUM FULL');

# A cohort erased whole leaves nothing of its value, nor of its
# statistics, in the extension's pages once the procedure ran (its
# statistics row in unlearn.cohorts is deleted; the ledger never holds
# the value).  ANALYZE first: unlearn.cohorts keeps no planner statistics,
# where an erased value would otherwise stay.
$node->safe_psql('postgres', q{
CREATE TABLE tenants AS SELECT id, one, pixels,
	CASE WHEN id % 4 = 0 THEN 'tenant-secret-7' ELSE 'tenant-' || (id % 4) END AS tenant
FROM ones;
SELECT model FROM unlearn_train('tenants', 'tenants', 'one', '{pixels}', sigma => 1, cohort => 'tenant');
ANALYZE unlearn.cohorts;
});
my $value_pattern = '\\x' . unpack('H*', 'tenant-secret-7');
my $stats_pattern = '\\x' . substr($node->safe_psql('postgres',
	"SELECT encode(substring(stats FROM 8 * 40 + 1 FOR 24), 'hex') FROM unlearn.cohorts WHERE cohort = 'tenant-secret-7'"), 0, 48);
cmp_ok($node->safe_psql('postgres', "SELECT pages_holding('$value_pattern')"), '>', 0,
	'the scan finds a kept cohort value');
cmp_ok($node->safe_psql('postgres', "SELECT pages_holding('$stats_pattern')"), '>', 0,
	'the scan finds the bytes of its statistics');
$node->safe_psql('postgres', "DELETE FROM tenants WHERE tenant = 'tenant-secret-7'");
is($node->safe_psql('postgres', "SELECT operation FROM unlearn.ledger WHERE model = 'tenants' ORDER BY id DESC LIMIT 1"),
	'cohort', 'the DELETE erased the cohort from its statistics');
is($node->safe_psql('postgres', "SELECT count(*) FROM unlearn.cohorts WHERE cohort = 'tenant-secret-7'"),
	'0', 'its statistics row is gone');
cmp_ok($node->safe_psql('postgres', "SELECT pages_holding('$value_pattern')"), '>', 0,
	'before the procedure: the erased value is in a raw page');
$node->safe_psql('postgres', 'VACUUM tenants');
$node->safe_psql('postgres', 'VACUUM FULL unlearn.models, unlearn.model_state, unlearn.cohorts');
is($node->safe_psql('postgres', "SELECT pages_holding('$value_pattern')"), '0',
	'after VACUUM FULL: no page of the extension holds the erased cohort value');
is($node->safe_psql('postgres', "SELECT pages_holding('$stats_pattern')"), '0',
	'nor the bytes of its statistics');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_statistic WHERE starelid = 'unlearn.cohorts'::regclass"),
	'0', 'unlearn.cohorts has no planner statistics');
is($node->safe_psql('postgres', q{SELECT certified FROM unlearn_verify('tenants')}), 't',
	'the cohort model is certified after the procedure');

$node->stop;
done_testing();

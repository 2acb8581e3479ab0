# GDPR erasure hygiene: after a DELETE commits and VACUUM runs, no
# extension table (nor its TOAST table) keeps a version of the model state
# that still contains the deleted row, and the ledger records counts and
# bounds only.  (The removal matrices are in no table: shared memory.)  Uses pg_dirtyread (Debian postgresql-15-dirtyread) to read
# dead tuples.  Also checks the NOTICE progress of verbose training.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('erasure');
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION unlearn; CREATE EXTENSION pg_dirtyread');
$node->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE ones AS SELECT id, label = 1 AS one, pixels FROM digits WHERE label IN (1, 7);
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM ones'), '361', 'real data loaded');

# verbose training reports one NOTICE per Newton iteration
my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT model FROM unlearn_train('ones', 'ones', 'one', '{pixels}', sigma => 1, verbose => true)");
is($ret, 0, 'verbose training succeeds');
my @iterations = ($err =~ /NOTICE:  (?:L-BFGS|Newton) iteration \d+: loss [0-9.e+-]+, gradient norm [0-9.e+-]+/g);
cmp_ok(scalar(@iterations), '>=', 3, 'one NOTICE per Newton iteration (' . scalar(@iterations) . ')');

my $toast = $node->safe_psql('postgres',
	"SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'unlearn.model_state'::regclass");
# name a subset of columns: detoasting a dead version would follow stale TOAST pointers
my $state_cols = 'model text, gram_bound float8';
my $chunk_cols = 'chunk_id oid, chunk_seq int';

sub versions
{
	my ($rel, $cols) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM pg_dirtyread('$rel') AS t($cols)");
}

my $live_state = $node->safe_psql('postgres', 'SELECT count(*) FROM unlearn.model_state');
my $live_chunks = $node->safe_psql('postgres', "SELECT count(*) FROM $toast");

# erase one person's row
$node->safe_psql('postgres', 'DELETE FROM ones WHERE id = (SELECT min(id) FROM ones WHERE one)');
is($node->safe_psql('postgres', "SELECT removed FROM unlearn.models WHERE model = 'ones'"),
	'1', 'the model removed the row');

# before VACUUM the old state (which still contains the row) is on disk
cmp_ok(versions('unlearn.model_state', $state_cols), '>', $live_state,
	'before VACUUM: a dead version of the model state exists');

$node->safe_psql('postgres', 'VACUUM unlearn.models, unlearn.model_state, unlearn.ledger');

is(versions('unlearn.model_state', $state_cols),
	$node->safe_psql('postgres', 'SELECT count(*) FROM unlearn.model_state'),
	'after VACUUM: only the live model state remains');
is(versions($toast, $chunk_cols),
	$node->safe_psql('postgres', "SELECT count(*) FROM $toast"),
	'after VACUUM: only live TOAST chunks remain');
is(versions('unlearn.models', 'model text, spent float8'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM unlearn.models'),
	'after VACUUM: only the live model row remains');

# the ledger has no column that could hold feature values
is($node->safe_psql('postgres', q{
	SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
	FROM pg_attribute WHERE attrelid = 'unlearn.ledger'::regclass AND attnum > 0 AND NOT attisdropped}),
	'id:bigint,model:text,owner:regrole,at:timestamp with time zone,xact:xid8,operation:text,'
	. 'rows_removed:bigint,rows_added:bigint,bound:double precision,spent:double precision,retrained:boolean,reanchored:boolean,nats:double precision',
	'the ledger keeps counts, times and bounds only');

$node->stop;
done_testing();

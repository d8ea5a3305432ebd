package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/store/pgtest"
)

// backendEnv selects the database the store's tests run on. The suite runs
// twice, so that every test (including ones added later) holds on both:
// first on SQLite in this process, then the same test binary again, with
// backendEnv=postgres, against a PostgreSQL server it starts itself.
const backendEnv = "SWITCHBOARD_STORE_TEST_BACKEND"

// testPG is the PostgreSQL server of the postgres run; nil on SQLite.
var testPG *pgtest.Server

func TestMain(m *testing.M) {
	switch os.Getenv(backendEnv) {
	case "":
		code := leaks(m.Run())
		fmt.Println("--- the same tests on PostgreSQL")
		if err := rerunOn("postgres"); err != nil {
			fmt.Fprintln(os.Stderr, "store tests on PostgreSQL:", err)
			code = 1
		}
		os.Exit(code)
	case "postgres":
		srv, err := pgtest.Start(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		testPG = srv
		code := m.Run()
		srv.Close()
		os.Exit(leaks(code))
	default:
		fmt.Fprintf(os.Stderr, "%s: want empty or postgres\n", backendEnv)
		os.Exit(2)
	}
}

// leaks fails a passing run that left a goroutine running (after the
// PostgreSQL server of the run is closed).
func leaks(code int) int {
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		return 1
	}
	return code
}

// rerunOn runs this test binary again with the same flags on backend.
func rerunOn(backend string) error {
	var args []string
	for _, a := range os.Args[1:] {
		// One coverage or profile file per run is the parent's.
		if strings.HasPrefix(a, "-test.coverprofile") || strings.HasSuffix(strings.SplitN(a, "=", 2)[0], "profile") {
			continue
		}
		args = append(args, a)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), backendEnv+"="+backend)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// openTest opens the store of the running backend. dir names the database:
// opening the same dir again reopens the same data (a restart).
func openTest(t *testing.T, dir string) *DB {
	t.Helper()
	s, err := opener(t, dir)()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// opener creates the database dir names when needed and returns how to
// open it (from any goroutine).
func opener(t testing.TB, dir string) func() (*DB, error) {
	t.Helper()
	ctx := context.Background()
	if testPG == nil {
		return func() (*DB, error) { return OpenSQLite(ctx, dir) }
	}
	sum := sha256.Sum256([]byte(dir))
	url, err := testPG.CreateDatabase(ctx, "t_"+hex.EncodeToString(sum[:8]))
	require.NoError(t, err)
	return func() (*DB, error) { return OpenPostgres(ctx, url) }
}

// onSQLite is for the few tests of SQLite itself (its file, its pragmas,
// its query planner).
func onSQLite(t *testing.T) {
	t.Helper()
	if testPG != nil {
		t.Skip("tests SQLite's own file and planner; the PostgreSQL run covers the queries")
	}
}

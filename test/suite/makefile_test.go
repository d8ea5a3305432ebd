package suite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// root is the repository's top directory, two up from test/suite.
const root = "../.."

// TestMakeTestExploresNothing: `make test` is deterministic, so it runs no
// fuzzing (go test replays the corpora); exploring is `make fuzz`'s job.
// make -n prints the commands, recursive makes included, without running
// them.
func TestMakeTestExploresNothing(t *testing.T) {
	out := makeN(t, "test")
	require.Contains(t, out, "test/suite/run.sh", "make test runs the suite")
	require.NotContains(t, out, "-fuzz", "make test explores at random")
	require.Contains(t, makeN(t, "fuzz"), "-fuzz", "make fuzz explores")
}

// makeN prints what `make target` would run, outside any make that runs
// this test (its MAKEFLAGS would be inherited).
func makeN(t *testing.T, target string) string {
	t.Helper()
	cmd := exec.Command("make", "-n", "-C", root, target)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=") || strings.HasPrefix(kv, "MFLAGS=")
	})
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// TestMakeFuzzListsEveryTarget: every fuzz target of the repository is in
// the Makefile's FUZZ list (as ./package:FuzzName), and the list names
// none that is gone, so `make fuzz` explores them all.
func TestMakeFuzzListsEveryTarget(t *testing.T) {
	listed := makefileFuzz(t)
	found := fuzzTargets(t)
	require.NotEmpty(t, found)
	require.ElementsMatch(t, found, listed, "the Makefile's FUZZ and the repository's fuzz targets differ")
}

// makefileFuzz reads the FUZZ variable's words (continuation lines
// included).
func makefileFuzz(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^FUZZ\s*:?=((?:.*\\\n)*.*)$`).FindSubmatch(b)
	require.NotNil(t, m, "the Makefile defines FUZZ")
	return strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))
}

// fuzzTargets finds every func FuzzX(*testing.F) in the repository's test
// files, as ./package:FuzzX.
func fuzzTargets(t *testing.T) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || !takesF(fn) {
				continue
			}
			out = append(out, "./"+filepath.ToSlash(rel)+":"+fn.Name.Name)
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(out)
	return out
}

// takesF says whether fn's one parameter is a *testing.F.
func takesF(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "F"
}

// Package suite holds what keeps the test suite itself honest: run.sh,
// which runs it (a failed top-level test once more alone, named FLAKY),
// and the checks of the Makefile's test and fuzz targets.
package suite

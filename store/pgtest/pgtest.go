// Package pgtest starts a throwaway PostgreSQL server for tests, from the
// binaries of Debian's postgresql package: initdb into a temporary
// directory, postgres listening on a free loopback port only (no Unix
// socket), password authentication, and as an unprivileged user when the
// test runs as root (PostgreSQL refuses to run as root). Missing binaries
// are an error, never a skip.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Owner is the superuser the server is created with.
const Owner = "switchboard"

const (
	startTimeout = 60 * time.Second
	stopTimeout  = 15 * time.Second
)

// Server is one running PostgreSQL server.
type Server struct {
	// Host and Port are where it listens (loopback).
	Host string
	Port int
	// Password is Owner's password.
	Password string

	dir  string
	cmd  *exec.Cmd
	done chan error
	logf string
}

// New starts a server for the test and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start(context.Background())
	if err != nil {
		t.Fatalf("start postgresql: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Binaries finds initdb and postgres: on PATH, else in Debian's
// /usr/lib/postgresql/<version>/bin (the newest version).
func Binaries() (initdb, postgres string, err error) {
	if i, err1 := exec.LookPath("initdb"); err1 == nil {
		if p, err2 := exec.LookPath("postgres"); err2 == nil {
			return i, p, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isExec(i) && isExec(p) {
			return i, p, nil
		}
	}
	return "", "", errors.New("postgresql binaries (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin: " +
		"install Debian's postgresql package ('make deps' as root)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&0o111 != 0
}

// Start runs initdb and postgres and waits until the server takes
// connections.
func Start(ctx context.Context) (_ *Server, err error) {
	initdb, postgres, err := Binaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "switchboard-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{Host: "127.0.0.1", dir: dir, Password: randomHex(16), logf: filepath.Join(dir, "postgres.log")}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		for _, p := range []string{dir, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("pgtest: %w", err)
			}
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.CommandContext(ctx, initdb, "-D", data, "-U", Owner, "--pwfile="+pwfile, "--auth=scram-sha-256",
		"-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %w: %s", err, out)
	}
	for attempt := 0; ; attempt++ {
		err := s.run(ctx, postgres, data, cred)
		if err == nil {
			return s, nil
		}
		if attempt == 2 {
			return nil, err
		}
	}
}

// run starts postgres on a free port and waits for it; an error means it
// did not come up (the port may have been taken in between: try again).
func (s *Server) run(ctx context.Context, postgres, data string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	logf, err := os.OpenFile(s.logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	// Durability is not what a test measures: fsync off keeps it fast.
	cmd := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := pgx.Connect(cctx, s.URL("postgres"))
		cancel()
		if err == nil {
			c.Close(ctx)
			s.cmd, s.done = cmd, done
			return nil
		}
		select {
		case werr := <-done:
			return fmt.Errorf("pgtest: postgres exited (%v): %s", werr, s.Log())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("pgtest: postgres did not accept connections in %v: %v: %s", startTimeout, err, s.Log())
		}
	}
}

// URL is the connection URL of database dbname as Owner.
func (s *Server) URL(dbname string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(Owner, s.Password),
		Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + dbname, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateDatabase creates database name (a SQL identifier of letters,
// digits and underscores) unless it exists, and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return "", fmt.Errorf("pgtest: database name %q: use a-z, 0-9 and _", name)
		}
	}
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	if n == 0 {
		if _, err := c.Exec(ctx, `CREATE DATABASE `+name); err != nil {
			return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
		}
	}
	return s.URL(name), nil
}

// Log is what the server wrote so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logf)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// Close stops the server (fast shutdown: sessions are disconnected) and
// removes its directory. It is safe to call twice.
func (s *Server) Close() error {
	var err error
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(stopTimeout):
			s.cmd.Process.Kill()
			<-s.done
			err = errors.New("pgtest: postgres did not stop in time; killed")
		}
		s.cmd = nil
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return err
}

// credential is who runs initdb and postgres: the current user, or when
// that is root, the postgres user of the Debian package (else nobody).
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("pgtest: running as root and neither the postgres nor the nobody user exists to run postgresql as")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

package pgboot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// DefaultRelocateRoot is where a cluster the postgres user could not reach
// in its DataDir lives instead (Config.RelocateRoot): /var/tmp, kept across
// reboots, unlike /tmp, and searchable by every user.
const DefaultRelocateRoot = "/var/tmp"

// relocatedFile, in DataDir, holds the path of the folder the cluster
// lives in when it had to be relocated.
const relocatedFile = "relocated-to"

// UnreachableError says that the postgres user, whom the server runs as
// when the caller is root, cannot reach a data folder: Blocked, a folder
// above it, is not searchable by that user (as /root, mode 0700, is not),
// and the cluster could not be put elsewhere either. Its message says what
// to do instead.
type UnreachableError struct {
	DataDir string
	Blocked string
	User    string
	// Reason is why the cluster could not be relocated, or is kept where
	// it is.
	Reason error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("pgboot: PostgreSQL refuses to run as root, so the private server runs as the %q user, "+
		"which cannot reach %s: %s is not searchable by it; %v. "+
		"Run as a user other than root, keep the data folder under a folder the %q user can enter, "+
		"or point WEFT_DATABASE_URL at a running server",
		e.User, e.DataDir, e.Blocked, e.Reason, e.User)
}

func (e *UnreachableError) Unwrap() error { return e.Reason }

// place returns the folder the cluster of dataDir lives in when the server
// runs as osUser. It is dataDir when osUser can reach it. Otherwise it is
// a folder of its own under root, owned by osUser, created on the first
// start and recorded in dataDir's relocatedFile, which every later start
// reads. A cluster already in dataDir is never moved: it is an
// *UnreachableError. dataDir must be absolute; it is created (mode 0700)
// when missing, to hold the record.
func place(dataDir, root, osUser string) (string, error) {
	u, err := user.Lookup(osUser)
	if err != nil {
		return "", fmt.Errorf("pgboot: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("pgboot: create %s: %w", dataDir, err)
	}
	if dir, ok, err := readRelocated(dataDir, u); ok || err != nil {
		return dir, err
	}
	blocked, err := unsearchableAbove(dataDir, u)
	if err != nil || blocked == "" {
		return dataDir, err
	}
	unreachable := &UnreachableError{DataDir: dataDir, Blocked: blocked, User: osUser}
	if _, err := os.Stat(filepath.Join(dataDir, "data", "PG_VERSION")); err == nil {
		unreachable.Reason = errors.New("a cluster is already there, and is not moved")
		return "", unreachable
	}
	dir, err := relocate(dataDir, root, u)
	if err != nil {
		unreachable.Reason = err
		return "", unreachable
	}
	return dir, nil
}

// readRelocated returns the folder recorded in dataDir's relocatedFile,
// and whether there is one. A recorded folder that is gone (a cleaned
// /var/tmp) is created again; one that is not a folder owned by u (a link,
// say) is an error.
func readRelocated(dataDir string, u *user.User) (string, bool, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, relocatedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("pgboot: %w", err)
	}
	dir := strings.TrimSpace(string(b))
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dir, true, makeOwned(dir, u)
	}
	if err != nil {
		return "", true, fmt.Errorf("pgboot: the cluster's folder recorded in %s: %w", filepath.Join(dataDir, relocatedFile), err)
	}
	if !ownedDir(st, u) {
		return "", true, fmt.Errorf("pgboot: %s, recorded in %s, is not a folder of the %q user: remove the record to start afresh",
			dir, filepath.Join(dataDir, relocatedFile), u.Username)
	}
	return dir, true, nil
}

// relocate creates a folder of u's under root for the cluster of dataDir
// and records it there. The folder's name is dataDir's own
// (relocatedName): one left by an earlier data folder at the same path,
// deleted with its record to start over, is removed first, so deleting
// the data folder starts afresh and leaves nothing behind.
func relocate(dataDir, root string, u *user.User) (string, error) {
	// The folders above root/x are root and those above it.
	blocked, err := unsearchableAbove(filepath.Join(root, "x"), u)
	if err != nil {
		return "", fmt.Errorf("nor can it reach %s: %w", root, err)
	}
	if blocked != "" {
		return "", fmt.Errorf("nor can it reach %s, where the cluster would go instead: %s is not searchable by it", root, blocked)
	}
	dir := filepath.Join(root, relocatedName(dataDir))
	if err := removeOrphan(dir, u); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("a folder for the cluster could not be made under %s: %w", root, err)
	}
	if err := chownTo(dir, u); err != nil {
		_ = os.Remove(dir)
		return "", err
	}
	record := filepath.Join(dataDir, relocatedFile)
	if err := os.WriteFile(record, []byte(dir+"\n"), 0o600); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("record the cluster's folder in %s: %w", record, err)
	}
	return dir, nil
}

// relocatedName is the name of the folder the cluster of dataDir is
// relocated to: weft-pg- and the first 16 hex digits of the SHA-256 of
// dataDir's path, so each data folder has its own.
func relocatedName(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return "weft-pg-" + hex.EncodeToString(sum[:8])
}

// removeOrphan removes dir, a cluster's folder no record names any more,
// when it is a folder of u's; nothing there is fine, and anything else (a
// link, another user's file) is an error, left alone.
func removeOrphan(dir string, u *user.User) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgboot: %w", err)
	}
	if !ownedDir(st, u) {
		return fmt.Errorf("pgboot: %s, where the cluster would go, is not a folder of the %q user: remove it to start afresh", dir, u.Username)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pgboot: remove the cluster a deleted data folder left in %s: %w", dir, err)
	}
	return nil
}

// ownedDir reports whether st, from Lstat, is a folder (not a link to
// one) that u owns.
func ownedDir(st fs.FileInfo, u *user.User) bool {
	return st.IsDir() && strconv.FormatUint(uint64(ownerOf(st)), 10) == u.Uid
}

// makeOwned creates dir (mode 0700, not its parents) owned by u.
func makeOwned(dir string, u *user.User) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("pgboot: %w", err)
	}
	return chownTo(dir, u)
}

func chownTo(path string, u *user.User) error {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Lchown(path, uid, gid); err != nil {
		return fmt.Errorf("pgboot: hand %s to %s: %w", path, u.Username, err)
	}
	return nil
}

// unsearchableAbove returns the first folder above path, from the root
// down, that u may not search (enter), or "" when u can reach path
// (searchableAbove).
func unsearchableAbove(path string, u *user.User) (string, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return "", fmt.Errorf("pgboot: uid of %s: %w", u.Username, err)
	}
	groups, err := u.GroupIds()
	if err != nil {
		return "", fmt.Errorf("pgboot: groups of %s: %w", u.Username, err)
	}
	return firstUnsearchable(path, uint32(uid), groups)
}

// firstUnsearchable returns the first folder above path, from the root
// down, that the user uid in groups may not search, or "". It judges by
// the owner, group and mode of each folder: access control lists are not
// read. Every folder above path must exist.
func firstUnsearchable(path string, uid uint32, groups []string) (string, error) {
	var above []string
	for dir := filepath.Dir(filepath.Clean(path)); ; dir = filepath.Dir(dir) {
		above = append(above, dir)
		if dir == filepath.Dir(dir) {
			break
		}
	}
	for _, dir := range slices.Backward(above) {
		st, err := os.Stat(dir)
		if err != nil {
			return "", fmt.Errorf("pgboot: %w", err)
		}
		if !searchable(st, uid, groups) {
			return dir, nil
		}
	}
	return "", nil
}

// searchable says whether the user uid, in groups, may search the folder
// of st, by its mode bits.
func searchable(st fs.FileInfo, uid uint32, groups []string) bool {
	if uid == 0 {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true // no owner to judge by: let the server's own start say
	}
	mode := st.Mode().Perm()
	switch {
	case sys.Uid == uid:
		return mode&0o100 != 0
	case slices.Contains(groups, strconv.FormatUint(uint64(sys.Gid), 10)):
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}

// ownerOf is the uid owning the file of st.
func ownerOf(st fs.FileInfo) uint32 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Uid
	}
	return 0
}

package spill

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRefusal: spill files go where every write lands in blocks reserved
// beforehand; a file system in memory, copy-on-write or across a network
// gets none.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   uint32
		want string // in the refusal; "" for none
	}{
		{"ext4", unix.EXT4_SUPER_MAGIC, ""},
		{"xfs", unix.XFS_SUPER_MAGIC, ""},
		{"overlayfs", unix.OVERLAYFS_SUPER_MAGIC, ""},
		{"tmpfs", unix.TMPFS_MAGIC, "tmpfs"},
		{"ramfs", unix.RAMFS_MAGIC, "tmpfs"},
		{"btrfs", unix.BTRFS_SUPER_MAGIC, "copy-on-write"},
		{"bcachefs", unix.BCACHEFS_SUPER_MAGIC, "copy-on-write"},
		{"zfs", zfsMagic, "copy-on-write"},
		{"nfs", unix.NFS_SUPER_MAGIC, "network"},
		{"cifs", unix.CIFS_SUPER_MAGIC, "network"},
		{"smb2", unix.SMB2_SUPER_MAGIC, "network"},
		{"fuse", unix.FUSE_SUPER_MAGIC, "FUSE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refusal(tc.fs)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("refusal(%#x) = %q, want one naming %q", tc.fs, got, tc.want)
			}
		})
	}
}

// BenchmarkResidentRead is the governor's cost a tick (one read of
// /proc/self/statm), beside what the tables save.
func BenchmarkResidentRead(b *testing.B) {
	r := newResident()
	defer r.close()
	for b.Loop() {
		if r.read() == 0 {
			b.Fatal("no resident set")
		}
	}
}

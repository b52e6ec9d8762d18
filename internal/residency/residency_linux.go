package residency

// This file defines ReleaseExecutable on Linux, from the mappings /proc/self/smaps lists.

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// ReleaseExecutable unmaps the resident pages of the mappings of the process's executable
// that are not writable and hold no page the process modified: its code and read-only data.
// The pages stay in the page cache, and the kernel maps those used again on their next use.
// It reports how many bytes of mappings it released; an error in reading the mappings releases
// nothing.
func ReleaseExecutable() (int64, error) {
	if Off() {
		return 0, nil
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return 0, err
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range readOnlyMappings(data, st.Dev, st.Ino) {
		// The addresses are those of the executable's own segments, which stay mapped as
		// long as the process lives.
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, errno
		}
		released += int64(m.end - m.start)
	}
	return released, nil
}

// A mapping is a range of addresses [start, end).
type mapping struct {
	start, end uintptr
}

// readOnlyMappings returns the mappings that smaps, the text of /proc/self/smaps, lists for
// the file of device dev and inode ino, that are private, not writable, and have no
// anonymous page: none that the process wrote (relocations of a dynamically linked
// executable, for instance), which releasing would undo.
func readOnlyMappings(smaps []byte, dev, ino uint64) []mapping {
	var out []mapping
	var cur mapping
	ok := false // whether cur is a candidate
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		if m, perms, mdev, mino, isHead := parseHead(line); isHead {
			cur = m
			ok = perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' && mdev == dev && mino == ino
			continue
		}
		if !ok {
			continue
		}
		if rest, found := bytes.CutPrefix(line, []byte("Anonymous:")); found {
			if kb, err := strconv.ParseUint(string(bytes.Fields(rest)[0]), 10, 64); err == nil && kb == 0 {
				out = append(out, cur)
			}
			ok = false
		}
	}
	return out
}

// parseHead parses the first line of a mapping's entry in smaps:
//
//	00400000-00f44000 r-xp 00000000 fd:01 1234   /path/to/file
//
// It reports false for any other line.
func parseHead(line []byte) (m mapping, perms []byte, dev, ino uint64, ok bool) {
	f := bytes.Fields(line)
	if len(f) < 5 || len(f[1]) != 4 {
		return m, nil, 0, 0, false
	}
	lo, hi, found := bytes.Cut(f[0], []byte("-"))
	if !found {
		return m, nil, 0, 0, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	major, minor, found := bytes.Cut(f[3], []byte(":"))
	maj, err3 := strconv.ParseUint(string(major), 16, 32)
	min, err4 := strconv.ParseUint(string(minor), 16, 32)
	inode, err5 := strconv.ParseUint(string(f[4]), 10, 64)
	if !found || err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil || end <= start {
		return m, nil, 0, 0, false
	}
	return mapping{uintptr(start), uintptr(end)}, f[1], mkdev(maj, min), inode, true
}

// mkdev returns the device number of major and minor as stat reports it (see makedev(3)).
func mkdev(major, minor uint64) uint64 {
	return (major&0xfffff000)<<32 | (major&0xfff)<<8 | (minor&0xffffff00)<<12 | minor&0xff
}

//! The seccomp filter of every confined program: the system calls that reach past the other
//! walls (Landlock, the namespaces), refused whatever the grant says.
//!
//! - `add_key`, `request_key`, `keyctl` fail with `ENOSYS`, as on a kernel built without keys:
//!   the session keyring (the operator's Kerberos tickets, ecryptfs keys, …) is inherited across
//!   `fork` and `exec` and no namespace replaces it.
//! - `io_uring_setup` fails with `ENOSYS`: its operations (sockets among them) are out of the
//!   filter's sight.
//! - `socket(AF_VSOCK, …)` fails with `EACCES`: vsock reaches the hypervisor and the other side
//!   of a virtual machine, and no network namespace or Landlock rule covers it. No grant means
//!   it, so it is refused with or without `network = true`.
//! - `socket(AF_UNIX, …)` fails with `EACCES` for programs without network: pathname Unix
//!   sockets (D-Bus, systemd, Docker) are not covered by Landlock before ABI 9.
//! - `ioctl(fd, TIOCSTI)` and `ioctl(fd, TIOCLINUX)` fail with `EPERM`: they type into a
//!   terminal (or paste a console's selection), which its shell then runs.
//! - System calls of another architecture kill the process, and the x32 ABI's fail with
//!   `ENOSYS`: their numbers would mean other calls than the ones checked here.
//!
//! Everything else is allowed. Arguments are compared on their low 32 bits, which is what the
//! kernel reads of them (`int domain`, `unsigned int cmd`): high bits cannot hide a value.

use std::io;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET: u16 = 0x06; // BPF_RET | BPF_K
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
// Offsets in `struct seccomp_data`: nr, arch, instruction pointer, args[6].
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0_LOW: u32 = if cfg!(target_endian = "little") { 16 } else { 20 };
const ARG1_LOW: u32 = ARG0_LOW + 8;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xC000_00F3;

/// Where each part of [`filter`] starts.
const ENOSYS_AT: usize = 12;
const SOCKET_AT: usize = 13;
const EACCES_AT: usize = 17;
const IOCTL_AT: usize = 18;
const EPERM_AT: usize = 22;
const LEN: usize = 23;

const fn op(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// At `at`, if the loaded word equals `k`, go to `to`, else on to the next instruction.
const fn jeq(at: usize, k: u32, to: usize) -> libc::sock_filter {
    op(JEQ, k, (to - at - 1) as u8, 0)
}

/// The filter; `unix_sockets`: whether `socket(AF_UNIX)` is allowed (the grant says
/// `network = true`).
const fn filter(unix_sockets: bool) -> [libc::sock_filter; LEN] {
    let unix = if unix_sockets { EACCES_AT - 1 } else { EACCES_AT };
    [
        /* 0 */ op(LD_W_ABS, ARCH, 0, 0),
        /* 1 */ op(JEQ, AUDIT_ARCH, 1, 0),
        /* 2 */ op(RET, RET_KILL_PROCESS, 0, 0),
        /* 3 */ op(LD_W_ABS, NR, 0, 0),
        /* 4 */ op(JGE, X32_SYSCALL_BIT, (ENOSYS_AT - 5) as u8, 0),
        /* 5 */ jeq(5, libc::SYS_io_uring_setup as u32, ENOSYS_AT),
        /* 6 */ jeq(6, libc::SYS_add_key as u32, ENOSYS_AT),
        /* 7 */ jeq(7, libc::SYS_request_key as u32, ENOSYS_AT),
        /* 8 */ jeq(8, libc::SYS_keyctl as u32, ENOSYS_AT),
        /* 9 */ jeq(9, libc::SYS_socket as u32, SOCKET_AT),
        /* 10 */ jeq(10, libc::SYS_ioctl as u32, IOCTL_AT),
        /* 11 */ op(RET, RET_ALLOW, 0, 0),
        /* 12 ENOSYS_AT */ op(RET, RET_ERRNO | libc::ENOSYS as u32, 0, 0),
        /* 13 SOCKET_AT: the domain */ op(LD_W_ABS, ARG0_LOW, 0, 0),
        /* 14 */ jeq(14, libc::AF_VSOCK as u32, EACCES_AT),
        /* 15 */ jeq(15, libc::AF_UNIX as u32, unix),
        /* 16 */ op(RET, RET_ALLOW, 0, 0),
        /* 17 EACCES_AT */ op(RET, RET_ERRNO | libc::EACCES as u32, 0, 0),
        /* 18 IOCTL_AT: the request */ op(LD_W_ABS, ARG1_LOW, 0, 0),
        /* 19 */ jeq(19, libc::TIOCSTI as u32, EPERM_AT),
        /* 20 */ jeq(20, libc::TIOCLINUX as u32, EPERM_AT),
        /* 21 */ op(RET, RET_ALLOW, 0, 0),
        /* 22 EPERM_AT */ op(RET, RET_ERRNO | libc::EPERM as u32, 0, 0),
    ]
}

/// For programs without network.
pub(crate) static OFFLINE: [libc::sock_filter; LEN] = filter(false);
/// For programs granted the network: Unix sockets allowed.
pub(crate) static NETWORK: [libc::sock_filter; LEN] = filter(true);

/// Install the filter on the calling thread (`PR_SET_NO_NEW_PRIVS` must be set); `network`: the
/// grant's `network`.
#[allow(unsafe_code)]
pub(crate) fn install(network: bool) -> io::Result<()> {
    let f = if network { &NETWORK } else { &OFFLINE };
    let prog = libc::sock_fprog { len: LEN as u16, filter: f.as_ptr().cast_mut() };
    // SAFETY: `prog` points at a static filter that outlives the call; the kernel copies it
    // and never writes through the pointer. prctl is async-signal-safe.
    let r = unsafe {
        libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER as libc::c_ulong, &prog as *const _)
    };
    if r != 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the filter answers for system call `nr` with arguments `args` from this
    /// architecture: a small interpreter of the instructions the filter uses.
    fn decide(f: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::new();
        data.extend_from_slice(&nr.to_ne_bytes());
        data.extend_from_slice(&arch.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes());
        for a in args {
            data.extend_from_slice(&a.to_ne_bytes());
        }
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = f[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => {
                    let at = i.k as usize;
                    acc = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
                }
                JEQ | JGE => {
                    let hit = if i.code == JEQ { acc == i.k } else { acc >= i.k };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                RET => return i.k,
                c => panic!("instruction {c:#x} at {} is not interpreted", pc - 1),
            }
        }
    }

    fn call(f: &[libc::sock_filter], nr: libc::c_long, args: [u64; 6]) -> u32 {
        decide(f, AUDIT_ARCH, nr as u32, args)
    }

    const ERR_EACCES: u32 = RET_ERRNO | libc::EACCES as u32;
    const ERR_ENOSYS: u32 = RET_ERRNO | libc::ENOSYS as u32;
    const ERR_EPERM: u32 = RET_ERRNO | libc::EPERM as u32;

    /// Every jump lands inside the filter, and the last instruction is a return.
    #[test]
    fn the_seccomp_filter_is_well_formed() {
        for f in [&OFFLINE, &NETWORK] {
            for (i, op) in f.iter().enumerate() {
                if op.code & 0x07 == 0x05 {
                    assert!(
                        i + 1 + (op.jt as usize) < f.len() && i + 1 + (op.jf as usize) < f.len(),
                        "jump {i}"
                    );
                }
            }
            assert_eq!(f[f.len() - 1].code, RET);
            assert_eq!((f[ENOSYS_AT].code, f[EACCES_AT].code, f[EPERM_AT].code), (RET, RET, RET));
        }
    }

    #[test]
    #[allow(clippy::unnecessary_cast)] // `libc::Ioctl` is `c_ulong` with glibc, `c_int` with musl
    fn keys_io_uring_vsock_and_terminal_injection_are_refused_with_or_without_network() {
        for f in [&OFFLINE, &NETWORK] {
            for nr in [libc::SYS_add_key, libc::SYS_request_key, libc::SYS_keyctl, libc::SYS_io_uring_setup] {
                assert_eq!(call(f, nr, [0; 6]), ERR_ENOSYS, "system call {nr}");
            }
            let vsock = libc::AF_VSOCK as u64;
            assert_eq!(call(f, libc::SYS_socket, [vsock, libc::SOCK_STREAM as u64, 0, 0, 0, 0]), ERR_EACCES);
            // The kernel reads an `int`: high bits do not hide the family.
            assert_eq!(call(f, libc::SYS_socket, [vsock | 1 << 32, 1, 0, 0, 0, 0]), ERR_EACCES);
            for req in [libc::TIOCSTI, libc::TIOCLINUX] {
                let req = req as u64;
                assert_eq!(call(f, libc::SYS_ioctl, [0, req, 0, 0, 0, 0]), ERR_EPERM, "ioctl {req:#x}");
                assert_eq!(call(f, libc::SYS_ioctl, [7, req | 1 << 40, 0, 0, 0, 0]), ERR_EPERM);
            }
            // What programs need goes through.
            assert_eq!(call(f, libc::SYS_ioctl, [1, libc::TCGETS as u64, 0, 0, 0, 0]), RET_ALLOW);
            assert_eq!(call(f, libc::SYS_ioctl, [1, libc::FIONREAD as u64, 0, 0, 0, 0]), RET_ALLOW);
            assert_eq!(call(f, libc::SYS_socket, [libc::AF_INET as u64, 1, 0, 0, 0, 0]), RET_ALLOW);
            assert_eq!(call(f, libc::SYS_socket, [libc::AF_INET6 as u64, 2, 0, 0, 0, 0]), RET_ALLOW);
            for nr in [libc::SYS_read, libc::SYS_openat, libc::SYS_close_range, libc::SYS_socketpair] {
                assert_eq!(call(f, nr, [libc::AF_VSOCK as u64, libc::TIOCSTI as u64, 0, 0, 0, 0]), RET_ALLOW);
            }
            // Another architecture's numbering, and the x32 ABI's.
            assert_eq!(decide(f, 0x4000_0003, libc::SYS_read as u32, [0; 6]), RET_KILL_PROCESS);
            assert_eq!(call(f, libc::SYS_read | X32_SYSCALL_BIT as libc::c_long, [0; 6]), ERR_ENOSYS);
        }
        let unix = [libc::AF_UNIX as u64, 1, 0, 0, 0, 0];
        assert_eq!(call(&OFFLINE, libc::SYS_socket, unix), ERR_EACCES, "no network: no Unix sockets");
        assert_eq!(call(&NETWORK, libc::SYS_socket, unix), RET_ALLOW, "granted the network");
    }
}

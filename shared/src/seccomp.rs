//! A seccomp filter that keeps every process of a job out of every other process's memory and
//! descriptors: `ptrace`, `process_vm_readv`, `process_vm_writev` and `pidfd_getfd` fail with
//! EPERM.
//!
//! Why: the CLI and every program its tools start share one uid and one Landlock domain, so
//! without it any of them could take the CLI's stdout with `pidfd_getfd` (or write into the CLI
//! with `ptrace` or `process_vm_writev`) and add bytes to the stream the verdict is read from.
//! No coding-agent CLI needs these calls. moot-run installs the filter between fork and exec
//! ([`Filter::install`]), so it holds for the sandbox and everything below it, and nothing in
//! the job can lift it (filters are inherited and only ever added to).
//!
//! Another architecture's system calls (a 32-bit binary, `int 0x80`) would dodge a number
//! check, so a foreign architecture kills the process; on x86-64 the x32 numbers are refused
//! too. `/proc/<pid>/mem`, the other way into a process, is written only with a write grant on
//! `/proc`, which moot-sandbox never gives (src/sandbox/).

use std::io;

use nix::libc;

/// `SECCOMP_RET_*` and the BPF opcodes of `linux/filter.h`, as the kernel defines them.
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K
/// Offsets in `struct seccomp_data`.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64

/// x32 system calls arrive with this bit set under the x86-64 architecture.
#[cfg(target_arch = "x86_64")]
const FIRST_FOREIGN_NR: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const FIRST_FOREIGN_NR: Option<u32> = None;

/// The calls that reach into another process.
const DENIED: [libc::c_long; 4] = [
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
];

/// A compiled filter, built before fork so that installing it allocates nothing.
pub struct Filter {
    program: Vec<libc::sock_filter>,
}

impl Filter {
    /// The filter that denies [`DENIED`] with EPERM and allows everything else.
    pub fn deny_cross_process() -> Self {
        Self::denying(&DENIED, libc::EPERM)
    }

    /// A filter that answers `calls` with `errno` and allows everything else, as a container's
    /// profile does for the calls it leaves out (the tests' stand-in for one).
    pub fn denying(calls: &[libc::c_long], errno: i32) -> Self {
        let mut program = vec![
            load(ARCH_OFFSET),
            jump_if_equal(AUDIT_ARCH, 1, 0),
            ret(RET_KILL_PROCESS),
            load(NR_OFFSET),
        ];
        // Every check jumps to the EPERM return, which follows the final ALLOW.
        let checks = calls.len() + usize::from(FIRST_FOREIGN_NR.is_some());
        let mut left = checks;
        if let Some(first) = FIRST_FOREIGN_NR {
            program.push(jump(JGE_K, first, to_u8(left), 0));
            left -= 1;
        }
        for &nr in calls {
            program.push(jump_if_equal(nr as u32, to_u8(left), 0));
            left -= 1;
        }
        program.push(ret(RET_ALLOW));
        program.push(ret(RET_ERRNO | (errno as u32 & 0xffff)));
        Filter { program }
    }

    /// Sets no_new_privs (seccomp requires it without CAP_SYS_ADMIN) and installs the filter on
    /// the calling thread. Async-signal-safe: for use between fork and exec.
    pub fn install(&self) -> io::Result<()> {
        let program = libc::sock_fprog {
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: plain system calls; `program` points into `self.program`, alive for the call.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Jump offsets are one byte; the program is a handful of instructions.
fn to_u8(offset: usize) -> u8 {
    u8::try_from(offset).unwrap_or(u8::MAX)
}

fn load(offset: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: LD_W_ABS,
        jt: 0,
        jf: 0,
        k: offset,
    }
}

fn jump_if_equal(value: u32, if_true: u8, if_false: u8) -> libc::sock_filter {
    jump(JEQ_K, value, if_true, if_false)
}

fn jump(code: u16, value: u32, if_true: u8, if_false: u8) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: if_true,
        jf: if_false,
        k: value,
    }
}

fn ret(value: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: RET_K,
        jt: 0,
        jf: 0,
        k: value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// Each check's true branch lands on the EPERM return, and a miss falls through to ALLOW.
    #[test]
    fn every_check_jumps_to_the_errno_return() {
        let program = Filter::deny_cross_process().program;
        let errno_at = program.len() - 1;
        assert_eq!(program[errno_at].k, RET_ERRNO | libc::EPERM as u32);
        assert_eq!(program[errno_at - 1].k, RET_ALLOW);
        let checks = &program[4..errno_at - 1];
        assert_eq!(
            checks.len(),
            DENIED.len() + usize::from(FIRST_FOREIGN_NR.is_some())
        );
        for (at, check) in checks.iter().enumerate() {
            let target = 4 + at + 1 + usize::from(check.jt);
            assert_eq!(target, errno_at, "check {at} jumps to {target}");
            assert_eq!(check.jf, 0);
        }
    }

    /// The real kernel: a process under the filter cannot ptrace or take a descriptor of
    /// another, and still runs everything else (python3 is on every machine CI runs on).
    #[test]
    fn the_kernel_refuses_the_denied_calls_and_allows_the_rest() {
        let filter = Filter::deny_cross_process();
        let script = "import ctypes, os\n\
            libc = ctypes.CDLL(None, use_errno=True)\n\
            def call(*args):\n\
            \x20   r = libc.syscall(*args)\n\
            \x20   return 'ok' if r >= 0 else os.strerror(ctypes.get_errno())\n\
            pidfd = os.pidfd_open(os.getppid())\n\
            print(call(%d, pidfd, 1, 0), call(%d, 0x4206, os.getppid(), 0, 0), call(%d, pidfd, 0, None, 0))\n";
        let script = script
            .replacen("%d", &libc::SYS_pidfd_getfd.to_string(), 1)
            .replacen("%d", &libc::SYS_ptrace.to_string(), 1)
            .replacen("%d", &libc::SYS_pidfd_send_signal.to_string(), 1);
        let mut command = Command::new("python3");
        command.args(["-c", &script]);
        // SAFETY: install() only makes system calls.
        unsafe {
            command.pre_exec(move || filter.install());
        }
        let out = command.output().expect("python3 runs");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "Operation not permitted Operation not permitted ok"
        );
    }
}

# The process that runs as PID 1 inside every sandbox invocation (bwrap --as-pid-1). It reads one operation, as
# JSON on stdin, from the host and does exactly that: run a shell command, or read/write/list one path confined to
# /work. Being PID 1 of the sandbox's own PID namespace, it reaps every process of the command's tree (orphans
# included), so RUSAGE_CHILDREN is the CPU of the whole tree; when the command's shell exits it kills everything
# left (kill(-1) from PID 1 reaches the whole namespace), so no process outlives its command. The result goes to
# fd 3 as one JSON object; fd 3 is never inherited by the command, and the launcher marks itself non-dumpable so
# processes of the same uid cannot open it through /proc/1/fd.
import base64
import ctypes
import errno
import json
import os
import resource
import signal
import stat
import sys

# The session's work dir inside the sandbox: /work, or the mount point the host names in the operation (a Harbor
# task's WORKDIR, such as /app).
WORK = '/work'
REPORT_FD = 3


def report(obj):
    data = json.dumps(obj).encode()
    view = memoryview(data)
    while view:
        written = os.write(REPORT_FD, view)
        view = view[written:]
    os.close(REPORT_FD)


def non_dumpable():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def confined(relative):
    """The absolute in-sandbox path of `relative`, or an error text when it is not inside /work."""
    if not isinstance(relative, str) or relative == '' or '\0' in relative:
        return None, 'path must be a non-empty string relative to the work dir'
    if relative.startswith('/'):
        return None, 'absolute paths are not allowed: give a path relative to the work dir'
    parts = [p for p in relative.split('/') if p not in ('', '.')]
    if '..' in parts:
        return None, "'..' is not allowed in a path"
    target = os.path.join(WORK, *parts) if parts else WORK
    real = os.path.realpath(target)
    if real != WORK and not real.startswith(WORK + '/'):
        return None, 'the path resolves outside the work dir (through a symlink)'
    return real, None


def set_limits(limits):
    def pair(value):
        return (value, value)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.get('cpu_secs'):
        resource.setrlimit(resource.RLIMIT_CPU, (limits['cpu_secs'], limits['cpu_secs'] + 1))
    if limits.get('memory_bytes'):
        resource.setrlimit(resource.RLIMIT_AS, pair(limits['memory_bytes']))
    if limits.get('file_bytes'):
        resource.setrlimit(resource.RLIMIT_FSIZE, pair(limits['file_bytes']))
    resource.setrlimit(resource.RLIMIT_NOFILE, pair(limits.get('open_files', 256)))


def run_command(op):
    limits = op.get('limits', {})
    try:
        pid = os.fork()
    except BlockingIOError:
        # The session's other commands hold all the processes its uid may have: this one never starts.
        os.write(2, b'sandbox: the command could not start: fork: Resource temporarily unavailable\n')
        return report({'cpu_ms': 0, 'exit_code': 126, 'not_started': 'processes'})
    if pid == 0:
        try:
            os.close(REPORT_FD)
            os.setsid()
            os.chdir(op.get('cwd') or WORK)
            set_limits(limits)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.execve('/bin/sh', ['sh', '-c', op['command']], op.get('env', {}))
        except BaseException as err:
            os.write(2, ('sandbox: cannot start the command: %s\n' % err).encode())
        os._exit(127)
    status = None
    while status is None:
        try:
            done, code = os.wait()
        except InterruptedError:
            continue
        if done == pid:
            status = code
    # The command's shell has exited: nothing else of its tree may outlive it. Kill again after every reap, so a
    # process forked while the previous kill was delivered (a fork bomb) cannot slip through.
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {'cpu_ms': int((usage.ru_utime + usage.ru_stime) * 1000), 'max_rss_kb': usage.ru_maxrss}
    if os.WIFSIGNALED(status):
        result['signal'] = os.WTERMSIG(status)
        result['exit_code'] = 128 + os.WTERMSIG(status)
    else:
        result['exit_code'] = os.WEXITSTATUS(status)
    report(result)


def read_file(op):
    path, error = confined(op['path'])
    if error:
        return report({'error': error})
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        return report({'error': os_error(err, op['path'])})
    with os.fdopen(fd, 'rb') as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return report({'error': '%s is not a regular file' % op['path']})
        size = os.fstat(fd).st_size
        data = handle.read(op['max_bytes'] + 1)
    truncated = len(data) > op['max_bytes']
    data = data[:op['max_bytes']]
    if truncated:
        # Do not cut a UTF-8 character in half at the cap.
        for cut in range(min(3, len(data)) + 1):
            try:
                (data[:len(data) - cut] if cut else data).decode('utf-8')
                data = data[:len(data) - cut] if cut else data
                break
            except UnicodeDecodeError:
                continue
    report({'content': data.decode('utf-8', errors='replace'), 'size': size, 'truncated': truncated})


def write_file(op):
    path, error = confined(op['path'])
    if error:
        return report({'error': error})
    if path == WORK:
        return report({'error': 'cannot write the work dir itself: name a file'})
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
        # The parent was resolved above; re-check it now it exists, then refuse to follow a symlink at the leaf.
        real_parent = os.path.realpath(parent)
        if real_parent != WORK and not real_parent.startswith(WORK + '/'):
            return report({'error': 'the path resolves outside the work dir (through a symlink)'})
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        # The host's own writes (a Harbor task's files copied after a RUN step) come as base64, with their mode.
        data = base64.b64decode(op['content_b64']) if 'content_b64' in op else op['content'].encode('utf-8')
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            if 'mode' in op:
                os.fchmod(handle.fileno(), op['mode'] & 0o755)
        report({'bytes_written': len(data)})
    except OSError as err:
        report({'error': os_error(err, op['path'])})


def list_dir(op):
    path, error = confined(op.get('path') or '.')
    if error:
        return report({'error': error})
    try:
        names = sorted(os.listdir(path))
    except OSError as err:
        return report({'error': os_error(err, op.get('path') or '.')})
    entries = []
    for name in names[:op['max_entries']]:
        try:
            info = os.lstat(os.path.join(path, name))
        except OSError:
            continue
        kind = 'dir' if stat.S_ISDIR(info.st_mode) else 'symlink' if stat.S_ISLNK(info.st_mode) else 'file' if stat.S_ISREG(info.st_mode) else 'other'
        entries.append({'name': name, 'type': kind, 'size': info.st_size})
    report({'entries': entries, 'truncated': len(names) > op['max_entries']})


def os_error(err, shown):
    reasons = {errno.ENOENT: 'no such file or directory', errno.EISDIR: 'is a directory', errno.ENOTDIR: 'not a directory',
               errno.ELOOP: 'is a symlink (not followed)', errno.ENOSPC: 'the work dir is full (disk limit)',
               errno.EFBIG: 'file too large (file size limit)', errno.EACCES: 'permission denied'}
    return '%s: %s' % (shown, reasons.get(err.errno, err.strerror))


def die_with_bwrap():
    # bwrap's --die-with-parent covers its own processes; set it here too, so the launcher dies with bwrap's monitor
    # even if that signal was lost in a race at start-up.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except Exception:
        pass


def main():
    die_with_bwrap()
    non_dumpable()
    # The operation arrives on stdin (a write's content can exceed what one argv string may hold); the command
    # then gets /dev/null as its stdin.
    chunks = []
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    null = os.open('/dev/null', os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    op = json.loads(b''.join(chunks))
    global WORK
    WORK = op.get('work') or WORK
    {'run': run_command, 'read': read_file, 'write': write_file, 'list': list_dir}[op['op']](op)


main()

'use strict'
// Every file jsprof-node writes goes through here — `-o` of every jsprof command, the traces, side
// files and status files of `jsprof record`, heap files, kept traces, stall traces — so that nobody
// else who can write the directory (a shared /tmp) can redirect or spoil the write:
// - the data goes to a temporary file beside the target, created exclusively (O_EXCL: a planted file
//   or link of that name makes the create fail, never write elsewhere), under a name nobody can guess
//   (`.<name>.<pid>-<16 random hex digits>.tmp`), mode 0600 until it is complete, then renamed into
//   place: a reader never sees half a file;
// - a symbolic link on the way (in the directories or at the name) is followed only when it belongs
//   to this user or to root, as the kernel's protected_symlinks does in sticky directories: a link
//   another user planted makes the write fail with a clear error (code EUNSAFELINK);
// - a FIFO or a character device (/dev/stdout, /dev/null, /dev/full) is written to, never replaced
//   by a regular file — only where the caller allows streams (`-o` names it), and only one of this
//   user's or root's; elsewhere (a name jsprof picked, such as a stall trace's) it is refused;
// - an existing regular file is replaced only when the caller says so (`-o` named it, or --force);
//   else the name is taken without replacing anything (link(2), atomic);
// - a file that is one of the command's inputs is never replaced (`convert t.json -o t.json`).

const fs = require('node:fs')
const path = require('node:path')

/** An output that cannot be written, with a `code` (EEXIST, EISDIR, EINPUT, EUNSAFELINK, ENOTFILE, or the system's). */
function outputError(code, message) {
  return Object.assign(new Error(message), { code })
}

const posix = process.platform !== 'win32'

/** Whether a file or link belongs to this user or to root (always so where there are no uids). */
function trusted(stat) {
  if (!posix || typeof process.geteuid !== 'function') return true
  return stat.uid === 0 || stat.uid === process.geteuid()
}

/**
 * `file` with its symbolic links followed, component by component, also when the last link dangles
 * (its target is then the file to create). Each link must be trusted (above). A link of /proc's
 * that names no path (`/dev/stdout` -> `/proc/self/fd/1` -> `pipe:[123]`) ends the walk there: the
 * caller opens it by that name.
 */
function resolveLinks(file) {
  const absolute = path.resolve(file)
  if (!posix) return absolute
  let current = '/'
  const pending = absolute.split('/').filter(Boolean)
  let hops = 0
  while (pending.length > 0) {
    const name = pending.shift()
    if (name === '.') continue
    if (name === '..') {
      current = path.dirname(current)
      continue
    }
    const next = path.join(current, name)
    let stat
    try {
      stat = fs.lstatSync(next)
    } catch (err) {
      if (err.code === 'ENOENT') return path.join(next, ...pending)
      throw err
    }
    if (!stat.isSymbolicLink()) {
      current = next
      continue
    }
    if (!trusted(stat))
      throw outputError(
        'EUNSAFELINK',
        `${next} is a symbolic link of another user (uid ${stat.uid}): not followed, nothing written`,
      )
    if (++hops > 40) throw outputError('ELOOP', 'too many levels of symbolic links')
    const target = fs.readlinkSync(next)
    if (!target.startsWith('/') && /^[a-z_]+:\[/.test(target)) return path.join(next, ...pending)
    if (target.startsWith('/')) current = '/'
    pending.unshift(...target.split('/').filter(Boolean))
  }
  return current
}

/** The same file (device and inode), for paths that exist. */
function sameFile(a, b) {
  return a.dev === b.dev && a.ino === b.ino
}

/** Writes all of `data` to an open fd (a socket may take it in parts, or say EAGAIN). */
function writeAll(fd, data) {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data
  let offset = 0
  while (offset < bytes.length) {
    try {
      offset += fs.writeSync(fd, bytes, offset, bytes.length - offset)
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1)
    }
  }
}

/** This process's umask, read without changing it (Linux), else by setting it back at once. */
function currentUmask() {
  try {
    const m = /^Umask:\s*([0-7]+)$/m.exec(fs.readFileSync('/proc/self/status', 'latin1'))
    if (m) return parseInt(m[1], 8)
  } catch {}
  return process.umask()
}

/** The temporary name of a write to `target`: beside it, unguessable, short enough for any target. */
function temporaryName(target) {
  const random = require('node:crypto').randomBytes(8).toString('hex')
  const base = path.basename(target).slice(0, 100)
  return path.join(path.dirname(target), `.${base}.${process.pid}-${random}.tmp`)
}

/** Whether `name` (a base name) is one of our temporaries, and the pid that made it. */
function temporaryOf(name) {
  const m = /^\..*\.(\d+)-[0-9a-f]{16}\.tmp$/.exec(name)
  return m ? { pid: Number(m[1]) } : null
}

/**
 * Writes `data` to the regular file `target` (no links left to follow) through an exclusive
 * temporary file, renamed over it (`replace`) or linked to its name only when the name is free.
 * `mode`: the file's permissions when complete.
 */
function writeThroughTemporary(target, data, { replace, mode }) {
  const tmp = temporaryName(target)
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW = 0 } = fs.constants
  const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
  try {
    try {
      writeAll(fd, data)
      if (posix) fs.fchmodSync(fd, mode)
    } finally {
      fs.closeSync(fd)
    }
    if (replace) fs.renameSync(tmp, target)
    else {
      try {
        fs.linkSync(tmp, target) // fails when anything, a dangling link included, has the name
      } catch (err) {
        if (err.code === 'EEXIST') throw outputError('EEXIST', `${target} exists`)
        throw err
      }
      fs.unlinkSync(tmp)
    }
  } catch (err) {
    try {
      fs.unlinkSync(tmp)
    } catch {}
    throw err
  }
}

/**
 * Writes `data` (a string or bytes) to `file` by the rules above. `replace`: an existing regular file
 * may be replaced. `inputs`: paths the command read, never written. `mode`: a new file's permissions
 * (default: the umask's). `streams`: a FIFO or device at the name is written to (else refused).
 * Returns `{ path, kind: 'new' | 'replaced' | 'stream' }`. Throws an error with a `code`.
 */
function writeOutputFile(file, data, { replace = true, inputs = [], mode, streams = true } = {}) {
  if (typeof file !== 'string' || file === '') throw outputError('ENOENT', 'no file name')
  const target = resolveLinks(file)
  let stat = null
  try {
    stat = fs.statSync(target) // a /proc link that names no path is followed here
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
  }
  if (stat) {
    for (const input of inputs) {
      let read
      try {
        read = fs.statSync(input)
      } catch {
        continue
      }
      if (sameFile(stat, read)) throw outputError('EINPUT', `${file} is the input ${input}: refusing to write over it`)
    }
    if (stat.isFIFO() || stat.isCharacterDevice() || stat.isSocket()) {
      if (!streams) throw outputError('ENOTFILE', `${file} is not a regular file`)
      // Our own stdout or stderr by name (a socket behind /dev/stdout cannot be opened): its fd.
      for (const fd of [1, 2]) {
        let own = null
        try {
          own = fs.fstatSync(fd)
        } catch {}
        if (own && sameFile(own, stat)) return (writeAll(fd, data), { path: file, kind: 'stream' })
      }
      if (stat.isSocket()) throw outputError('ENOTFILE', 'a socket, not a file, a pipe or a device')
      if (!trusted(stat)) throw outputError('EUNSAFELINK', `${file} belongs to another user (uid ${stat.uid})`)
      // Opened without O_CREAT or O_TRUNC, and checked again once open: what was swapped in since the
      // stat above is neither created nor cut.
      const fd = fs.openSync(target, fs.constants.O_WRONLY | (fs.constants.O_NOCTTY ?? 0))
      try {
        const opened = fs.fstatSync(fd)
        if (!sameFile(opened, stat)) throw outputError('ENOTFILE', `${file} changed while it was opened`)
        writeAll(fd, data)
      } finally {
        fs.closeSync(fd)
      }
      return { path: file, kind: 'stream' }
    }
    if (stat.isDirectory()) throw outputError('EISDIR', `${file} is a directory`)
    if (!stat.isFile()) throw outputError('ENOTFILE', 'not a regular file, a pipe or a device')
    if (!replace) throw outputError('EEXIST', `${file} exists`)
  }
  // A replaced file keeps its permissions; a new one gets `mode` when given (`jsprof record`: the
  // user's umask, not the app's), else the umask's.
  const finalMode = stat ? stat.mode & 0o7777 : Number.isInteger(mode) ? mode & 0o777 : 0o666 & ~currentUmask()
  writeThroughTemporary(target, data, { replace, mode: finalMode })
  return { path: target, kind: stat ? 'replaced' : 'new' }
}

/**
 * Creates `file` for writing, exclusively (a file or link of that name makes it fail with EEXIST),
 * mode 0600, the links of its directories checked as above: an fd. For files written in parts (the
 * side file of `jsprof record`).
 */
function createExclusive(file) {
  const target = path.join(resolveLinks(path.dirname(path.resolve(file))), path.basename(file))
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW = 0 } = fs.constants
  return fs.openSync(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
}

/** Throws unless a file can be created in `dir` (one of our temporaries, made and removed at once). */
function probeWritable(dir) {
  const probe = temporaryName(path.join(resolveLinks(dir), 'probe'))
  fs.closeSync(createExclusive(probe))
  fs.unlinkSync(probe)
}

module.exports = { writeOutputFile, createExclusive, probeWritable, resolveLinks, temporaryOf }

'use strict'
// Writing an output file (`-o` of every jsprof command, and the trace `jsprof record` writes from
// inside the app) without replacing anything behind the user's back:
// - a symlink is written through: its target gets the data, the link stays a link;
// - a FIFO or a character device (/dev/stdout, /dev/null, /dev/full) is written to, never replaced
//   by a regular file (temp-and-rename would put a file where the device node was);
// - a regular file or a new path gets a temporary file beside it, renamed over it: never half-written;
// - an existing regular file is replaced only when the caller says so (`-o` named it, or --force);
// - a file that is one of the command's inputs is never replaced (`convert t.json -o t.json`).

const fs = require('node:fs')
const path = require('node:path')

/** An output that cannot be written, with a `code` (EEXIST, EISDIR, EINPUT, or the system's). */
function outputError(code, message) {
  return Object.assign(new Error(message), { code })
}

/** `file` with its symlinks followed, also when the last link dangles (its target is created). */
function resolveLinks(file) {
  let current = path.resolve(file)
  for (let hops = 0; hops < 40; hops++) {
    let stat
    try {
      stat = fs.lstatSync(current)
    } catch (err) {
      if (err.code === 'ENOENT') return current
      throw err
    }
    if (!stat.isSymbolicLink()) return current
    current = path.resolve(path.dirname(current), fs.readlinkSync(current))
  }
  throw outputError('ELOOP', 'too many levels of symbolic links')
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

/**
 * Writes `data` (a string or bytes) to `file` by the rules above. `replace`: an existing regular file
 * may be replaced. `inputs`: paths the command read, never written. `mode`: a new file's permissions
 * (default: the umask's). Throws an error with a `code`.
 */
function writeOutputFile(file, data, { replace = true, inputs = [], mode } = {}) {
  let stat = null
  try {
    stat = fs.statSync(file) // follows every link, /proc's magic ones (/dev/stdout) included
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
  }
  let target
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
      // Our own stdout or stderr by name (a socket behind /dev/stdout cannot be opened): its fd.
      for (const fd of [1, 2]) {
        let own = null
        try {
          own = fs.fstatSync(fd)
        } catch {}
        if (own && sameFile(own, stat)) return (writeAll(fd, data), { path: file, kind: 'stream' })
      }
      if (stat.isSocket()) throw outputError('ENOTFILE', 'a socket, not a file, a pipe or a device')
      fs.writeFileSync(file, data)
      return { path: file, kind: 'stream' }
    }
    if (stat.isDirectory()) throw outputError('EISDIR', `${file} is a directory`)
    if (!stat.isFile()) throw outputError('ENOTFILE', 'not a regular file, a pipe or a device')
    if (!replace) throw outputError('EEXIST', `${file} exists`)
    target = fs.realpathSync(file)
  } else {
    target = resolveLinks(file) // a new path, or a dangling symlink: its target is created
  }
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${Date.now().toString(36)}.tmp`)
  try {
    fs.writeFileSync(tmp, data, { mode: 0o666, flag: 'wx' })
    // A replaced file keeps its permissions; a new one gets `mode` when given (`jsprof record`: the
    // user's umask, not the app's), else the umask's.
    if (stat) fs.chmodSync(tmp, stat.mode & 0o7777)
    else if (Number.isInteger(mode)) fs.chmodSync(tmp, mode & 0o777)
    fs.renameSync(tmp, target)
  } catch (err) {
    try {
      fs.unlinkSync(tmp)
    } catch {}
    throw err
  }
  return { path: target, kind: stat ? 'replaced' : 'new' }
}

module.exports = { writeOutputFile }

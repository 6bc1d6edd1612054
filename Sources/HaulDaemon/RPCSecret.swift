import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The secret every RPC call must carry as `"token:SECRET"`. There is always one: given on the
/// command line, read from a file the user names, or generated once and kept in a file only its
/// owner can read (`rpc-secret` beside the catalog), so that clients keep working across restarts.
package enum RPCSecret {
  package enum Source: Sendable, Equatable {
    /// `--rpc-secret S`.
    case given(String)
    /// `--rpc-secret-file F`: the first line of a file the user keeps.
    case file(String)
    /// Neither: the one in `path`, made there (mode 0600, `O_EXCL`, no link followed) if missing.
    case generated(path: String)
  }

  /// The secret, and where it came from for the message at start.
  package struct Loaded: Sendable {
    package let secret: String
    /// The file it is in (nil when given on the command line).
    package let path: String?
    /// It was made just now.
    package let created: Bool
  }

  /// The longest secret accepted (aria2 has no limit; this keeps a mistyped path from reading a disk).
  static let maximumLength = 4096

  package static func load(_ source: Source) throws(HaulError) -> Loaded {
    switch source {
    case .given(let secret):
      return Loaded(secret: try checked(secret, from: "--rpc-secret"), path: nil, created: false)
    case .file(let path):
      return Loaded(secret: try readGiven(path), path: path, created: false)
    case .generated(let path):
      if let existing = try readKept(path) { return Loaded(secret: existing, path: path, created: false) }
      return Loaded(secret: try create(path), path: path, created: true)
    }
  }

  /// A new secret: 128 bits from the system's CSPRNG, as 32 hex digits (safe in URLs and shells).
  package static func generate() -> String {
    RandomToken.hex(bytes: 16)
  }

  private static func readKept(_ path: String) throws(HaulError) -> String? {
    let file: SafeFile
    do {
      file = try SafeFile.openExisting(path, access: .readOnly)
    } catch {
      if error.errno == ENOENT { return nil }
      throw error.haulError
    }
    do {
      try requirePrivate(
        try file.status(), path, hint: "chmod 600 \(path), or remove it to have a new secret made")
    } catch let error as SystemError {
      throw HaulError(.fileSystem, "cannot check \(path)", underlying: error)
    } catch let error as HaulError {
      throw error
    } catch {
      throw HaulError(.fileSystem, "cannot check \(path)")
    }
    do {
      return try checked(firstLine(try file.readAll(limit: maximumLength)), from: path)
    } catch let error as LocalFileError {
      throw error.haulError
    } catch let error as HaulError {
      throw error
    } catch {
      throw HaulError(.fileSystem, "cannot read \(path)")
    }
  }

  /// The secret in the file the user names: followed like any path they type (a link into a
  /// secrets directory, a pipe from `<(…)`), but a regular file others can read is refused, as
  /// the kept one is, since a secret others can read protects nothing.
  private static func readGiven(_ path: String) throws(HaulError) -> String {
    let descriptor = SystemCall.retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) }
    guard descriptor >= 0 else { throw LocalFileError(path, call: "open", errno: errno).haulError }
    defer { close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else {
      throw HaulError(.fileSystem, "cannot check \(path)", underlying: SystemError("fstat", errno: errno))
    }
    if info.st_mode & S_IFMT == S_IFDIR { throw LocalFileError(path, .notRegular("a directory")).haulError }
    if info.st_mode & S_IFMT == S_IFREG { try requirePrivate(info, path, hint: "chmod 600 \(path)") }
    let bytes: [UInt8]
    do {
      bytes = try UserFiles.readAll(descriptor: descriptor, limit: maximumLength, name: path)
    } catch {
      throw error.haulError
    }
    return try checked(firstLine(bytes), from: path)
  }

  /// Refuses a secret's file that users other than its owner can read or write.
  private static func requirePrivate(_ info: stat, _ path: String, hint: String) throws(HaulError) {
    let mode = info.st_mode
    guard mode & 0o077 == 0 else {
      throw HaulError(
        .fileSystem, "\(path) can be read by other users (mode \(String(mode & 0o777, radix: 8)))", hint: hint
      )
    }
  }

  private static func create(_ path: String) throws(HaulError) -> String {
    let secret = generate()
    do {
      let file = try SafeFile.createExclusive(path, access: .readWrite, mode: 0o600)
      do throws(SystemError) {
        try file.writeAll(Array((secret + "\n").utf8))
        try file.sync()
      } catch {
        _ = unlink(path)
        throw HaulError(.fileSystem, "cannot write the RPC secret to \(path)", underlying: error)
      }
    } catch let error as LocalFileError {
      throw error.haulError
    } catch let error as HaulError {
      throw error
    } catch {
      throw HaulError(.fileSystem, "cannot create \(path)")
    }
    return secret
  }

  private static func firstLine(_ bytes: [UInt8]) -> String {
    String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }, as: UTF8.self)
  }

  private static func checked(_ secret: String, from origin: String) throws(HaulError) -> String {
    guard !secret.isEmpty else {
      throw HaulError(
        .invalidInput, "the RPC secret from \(origin) is empty", hint: "an empty secret would let anyone in")
    }
    guard secret.utf8.count <= maximumLength, !secret.contains("\u{0}") else {
      throw HaulError(.invalidInput, "the RPC secret from \(origin) is not a usable secret")
    }
    return secret
  }
}

import CCurl
import HaulCore

/// FTP spoken as HTTP: libcurl fetches the file (SIZE, MDTM, REST, RETR) and this turns what the
/// server said into the response head an HTTP server would have sent, so FTP resumes with the
/// engine's own decisions and validators: the size as the Content-Range total, the modification
/// time as Last-Modified (a changed time restarts, as a changed ETag does).
struct FTPResponse {
  /// A byte range as the engine asks for it (`Range: bytes=FIRST-[LAST]`).
  struct Range: Equatable {
    var first: Int64
    var last: Int64?

    /// `bytes=100-` or `bytes=100-199`; nil for anything else (suffix or multiple ranges).
    init?(httpRange value: String) {
      guard value.hasPrefix("bytes="), let dash = value.firstIndex(of: "-") else { return nil }
      let start = value[value.index(value.startIndex, offsetBy: 6)..<dash]
      let end = value[value.index(after: dash)...]
      guard !start.isEmpty, start.allSatisfy(\.isASCIIDigit), end.allSatisfy(\.isASCIIDigit),
        let first = Int64(start), first >= 0
      else { return nil }
      if end.isEmpty {
        last = nil
      } else {
        guard let last = Int64(end), last >= first else { return nil }
        self.last = last
      }
      self.first = first
    }

    /// CURLOPT_RANGE's form: `100-` or `100-199`.
    var curlRange: String { "\(first)-" + (last.map(String.init) ?? "") }
  }

  /// The range asked for, nil for the whole file.
  let range: Range?
  /// The file's size from the last `213` reply before the data (libcurl sends SIZE after MDTM),
  /// or as SFTP's stat told it.
  private(set) var size: Int64?

  init(range: Range?, size: Int64? = nil) {
    self.range = range
    self.size = size
  }

  /// A reply line the server sent on the control connection.
  mutating func receive(line: String) {
    guard line.hasPrefix("213 ") else { return }
    let value = line.dropFirst(4).trimmingWhitespace()
    if !value.isEmpty, value.allSatisfy(\.isASCIIDigit), let number = Int64(value) { size = number }
  }

  /// The head for what the server said. `modified` is MDTM as Unix seconds (nil when unknown);
  /// `unchanged` that a time condition was not met. nil when a range was asked for but the
  /// server never said the size (the bytes could not be placed safely).
  func head(modified: Int64?, unchanged: Bool, finalURL: String) -> ResponseHead? {
    var headers = HTTPHeaders()
    if let modified, let date = HTTPDate.format(modified) { headers.add(name: "Last-Modified", value: date) }
    if unchanged { return ResponseHead(status: 304, headers: headers, finalURL: finalURL) }
    headers.add(name: "Accept-Ranges", value: "bytes")
    guard let range else {
      if let size { headers.add(name: "Content-Length", value: String(size)) }
      return ResponseHead(status: 200, headers: headers, finalURL: finalURL)
    }
    guard let size else { return nil }
    guard range.first < size else {
      headers.add(name: "Content-Range", value: "bytes */\(size)")
      headers.add(name: "Content-Length", value: "0")
      return ResponseHead(status: 416, headers: headers, finalURL: finalURL)
    }
    let last = min(range.last ?? (size - 1), size - 1)
    headers.add(name: "Content-Range", value: "bytes \(range.first)-\(last)/\(size)")
    headers.add(name: "Content-Length", value: String(last - range.first + 1))
    return ResponseHead(status: 206, headers: headers, finalURL: finalURL)
  }

  /// The status an HTTP server gives for what libcurl's FTP code `code` says, if it has one.
  static func status(forCurlCode code: Int32) -> Int? {
    switch code {
    case Int32(CCURLE_BAD_DOWNLOAD_RESUME): 416
    case Int32(CCURLE_REMOTE_FILE_NOT_FOUND), Int32(CCURLE_FTP_COULDNT_RETR_FILE): 404
    case Int32(CCURLE_REMOTE_ACCESS_DENIED): 403
    case Int32(CCURLE_LOGIN_DENIED): 401
    default: nil
    }
  }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

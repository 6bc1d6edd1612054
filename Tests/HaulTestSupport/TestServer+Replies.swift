import Foundation

// How the test server decides a reply (under its lock): scripted replies, redirects, faults,
// ranges and If-Range.
extension ServerCore {
  static func plan(for request: ParsedRequest, connection: Int, state: inout ServerState) -> Plan {
    let keys = lookupKeys(request.target)

    for key in keys {
      guard var queue = state.scripted[key], !queue.isEmpty else { continue }
      let reply = queue.removeFirst()
      state.scripted[key] = queue
      switch reply {
      case .status(let status, let headers, let body):
        record(&state, request, connection: connection, reply: .scripted, status: status)
        return .simple(status: status, headers: headers, body: body)
      case .redirect(let status, let location):
        record(&state, request, connection: connection, reply: .scripted, status: status)
        return .simple(status: status, headers: [("Location", location)], body: [])
      case .dropConnection:
        record(&state, request, connection: connection, reply: .scripted, status: nil, faulted: true)
        return .drop
      }
    }

    for key in keys {
      guard let redirect = state.redirects[key] else { continue }
      record(&state, request, connection: connection, reply: .redirect, status: redirect.status)
      return .simple(status: redirect.status, headers: [("Location", redirect.location)], body: [])
    }

    for key in keys {
      guard let resource = state.resources[key] else { continue }
      return resourcePlan(request, resource, key: key, connection: connection, state: &state)
    }

    record(&state, request, connection: connection, reply: .notFound, status: 404)
    return .simple(status: 404, headers: [("Content-Type", "text/plain")], body: Array("not found\n".utf8))
  }

  private static func resourcePlan(
    _ request: ParsedRequest, _ resource: TestResource, key: String, connection: Int,
    state: inout ServerState
  ) -> Plan {
    let faults = resource.faults
    if let required = faults.requireAuthorization, request.headers["Authorization"] != required {
      record(&state, request, connection: connection, reply: .unauthorized, status: 401)
      return .simple(
        status: 401,
        headers: [("WWW-Authenticate", "Basic realm=\"HaulTest\""), ("Content-Type", "text/plain")],
        body: Array("unauthorized\n".utf8))
    }
    let isHead = request.method == "HEAD"
    if (isHead && faults.refuseHEAD) || (request.method != "GET" && !isHead) {
      record(&state, request, connection: connection, reply: .methodNotAllowed, status: 405)
      return .simple(
        status: 405, headers: [("Allow", faults.refuseHEAD ? "GET" : "GET, HEAD")],
        body: Array("method not allowed\n".utf8))
    }

    if let limit = faults.expireAfterResponses, state.answered[key, default: 0] >= limit {
      record(&state, request, connection: connection, reply: .resource, status: faults.expiredStatus)
      return .simple(
        status: faults.expiredStatus, headers: [("Content-Type", "text/plain")], body: Array("expired\n".utf8)
      )
    }
    let total = resource.body.count
    let reportedTotal = faults.wrongTotal ?? total
    var status = 200
    var slice = resource.body[...]
    var contentRange: String?
    state.answered[key, default: 0] += 1
    let ignoresRange =
      faults.ignoreRange || (faults.alternateIgnoringRange && state.answered[key, default: 0] % 2 == 0)
    // Range is only defined for GET (RFC 9110 §14.2).
    if !isHead, !ignoresRange, let rangeValue = request.headers["Range"] {
      var applies = true
      if let ifRange = request.headers["If-Range"], !faults.ignoreIfRange {
        applies = ifRangeMatches(ifRange, resource)
      }
      if applies {
        switch parseRange(rangeValue, total: total) {
        case .ignore:
          break
        case .unsatisfiable:
          status = 416
          slice = []
          contentRange = "bytes */\(reportedTotal)"
        case .satisfiable(let range):
          status = 206
          slice = resource.body[range]
          let shift = faults.contentRangeShift
          contentRange =
            "bytes \(range.lowerBound + shift)-\(range.upperBound - 1 + shift)/\(reportedTotal)"
        }
      }
    }

    var headers: [(String, String)] = []
    if let contentType = resource.contentType { headers.append(("Content-Type", contentType)) }
    headers.append(contentsOf: resource.extraHeaders)
    if let contentDigest = resource.contentDigest, status != 416 {
      headers.append(("Content-Digest", contentDigest(slice)))
    }
    if !isHead, status == 206, let index = faults.corruptByte, slice.indices.contains(index),
      state.corruptionsDone[key, default: 0] < faults.corruptTimes
    {
      state.corruptionsDone[key, default: 0] += 1
      var corrupted = Array(slice)
      corrupted[index - slice.startIndex] ^= 0x01
      slice = corrupted[...]
    }
    if faults.chunked && status != 416 {
      headers.append(("Transfer-Encoding", "chunked"))
    } else if let claimed = faults.claimedLength, status == 200 {
      headers.append(("Content-Length", String(claimed)))
    } else {
      headers.append(("Content-Length", String(slice.count)))
    }
    if let contentRange { headers.append(("Content-Range", contentRange)) }
    if !faults.ignoreRange { headers.append(("Accept-Ranges", "bytes")) }
    if let etag = resource.etag { headers.append(("ETag", etag)) }
    if let lastModified = resource.lastModified { headers.append(("Last-Modified", lastModified)) }
    if let disposition = resource.contentDisposition { headers.append(("Content-Disposition", disposition)) }

    var cutAfter: Int?
    var stall = false
    if !isHead && status != 416 {
      if let count = faults.dropAfterBytes, count < slice.count,
        state.dropsDone[key, default: 0] < faults.dropTimes
      {
        state.dropsDone[key, default: 0] += 1
        cutAfter = max(0, count)
      } else if let count = faults.stallAfterBytes, count < slice.count,
        state.stallsDone[key, default: 0] < faults.stallTimes
      {
        state.stallsDone[key, default: 0] += 1
        cutAfter = max(0, count)
        stall = true
      }
    }
    // A claimed length is never met: the whole body, then the connection closes.
    if faults.claimedLength != nil, status == 200, cutAfter == nil { cutAfter = slice.count }
    record(
      &state, request, connection: connection, reply: .resource, status: status,
      contentRange: contentRange, faulted: cutAfter != nil)
    return .resource(
      ResourcePlan(
        status: status, headers: headers, body: slice, chunked: faults.chunked, cutAfter: cutAfter,
        stall: stall, bytesPerSecond: faults.bytesPerSecond, key: key))
  }

  /// RFC 9110 §13.1.5: an entity tag matches only by strong comparison; a date only if it is exactly
  /// the Last-Modified value.
  private static func ifRangeMatches(_ value: String, _ resource: TestResource) -> Bool {
    let value = value.trimmingCharacters(in: .whitespaces)
    if value.hasPrefix("\"") || value.hasPrefix("W/") {
      guard let etag = resource.etag, !etag.hasPrefix("W/"), !value.hasPrefix("W/") else { return false }
      return value == etag
    }
    guard let lastModified = resource.lastModified else { return false }
    return value == lastModified
  }

  /// A single `bytes=` range; anything else (other units, several ranges, bad syntax) is ignored.
  private static func parseRange(_ value: String, total: Int) -> RangeRequest {
    let value = value.trimmingCharacters(in: .whitespaces)
    guard value.lowercased().hasPrefix("bytes=") else { return .ignore }
    let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
    guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignore }
    let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
    let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
    func number(_ text: String) -> Int? {
      guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
      return Int(text)
    }
    if first.isEmpty {
      guard let suffix = number(last) else { return .ignore }
      if suffix == 0 || total == 0 { return .unsatisfiable }
      return .satisfiable(max(0, total - suffix)..<total)
    }
    guard let start = number(first) else { return .ignore }
    var end = total - 1
    if !last.isEmpty {
      guard let given = number(last), given >= start else { return .ignore }
      end = min(given, total - 1)
    }
    if start >= total { return .unsatisfiable }
    return .satisfiable(start..<(end + 1))
  }
}

enum RangeRequest {
  case ignore
  case unsatisfiable
  case satisfiable(Range<Int>)
}

func reasonPhrase(_ status: Int) -> String {
  switch status {
  case 200: "OK"
  case 201: "Created"
  case 204: "No Content"
  case 206: "Partial Content"
  case 301: "Moved Permanently"
  case 302: "Found"
  case 303: "See Other"
  case 304: "Not Modified"
  case 307: "Temporary Redirect"
  case 308: "Permanent Redirect"
  case 400: "Bad Request"
  case 401: "Unauthorized"
  case 403: "Forbidden"
  case 404: "Not Found"
  case 405: "Method Not Allowed"
  case 407: "Proxy Authentication Required"
  case 408: "Request Timeout"
  case 410: "Gone"
  case 412: "Precondition Failed"
  case 416: "Range Not Satisfiable"
  case 429: "Too Many Requests"
  case 431: "Request Header Fields Too Large"
  case 500: "Internal Server Error"
  case 502: "Bad Gateway"
  case 503: "Service Unavailable"
  case 504: "Gateway Timeout"
  default: "Status \(status)"
  }
}

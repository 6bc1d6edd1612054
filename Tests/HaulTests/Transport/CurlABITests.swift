import CCurl
import Foundation
import Testing

@Suite struct CurlABITests {
  @Test func declarationsWereCheckedAgainstCurlHeadersInCI() {
    // CI installs curl.h; there the static assertions in abi_check.c must have been compiled in.
    guard ProcessInfo.processInfo.environment["CI"] == "true" else { return }
    #expect(ccurl_abi_checked_against_headers() == 1)
  }

  @Test func libcurlLoads() {
    #expect(String(cString: ccurl_version()).hasPrefix("libcurl/"))
  }
}

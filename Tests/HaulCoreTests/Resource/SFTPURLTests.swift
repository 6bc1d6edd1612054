import Testing

@testable import HaulCore

/// sftp:// URLs are accepted like ftp:// ones, and their passwords stay out of state files.
@Suite struct SFTPURLTests {
  @Test func acceptedAndNormalized() throws {
    #expect(try RequestURL.normalize("SFTP://joe@h:2222/srv/a b") == "sftp://joe@h:2222/srv/a%20b")
    #expect(try RequestURL.normalize("sftp://h/~/f.iso") == "sftp://h/~/f.iso")
  }

  @Test func passwordLeftOut() {
    #expect(RequestURL.withoutPassword("sftp://joe:s3cret@h:2222/f") == "sftp://joe@h:2222/f")
  }
}

// Test certificates for the TLS tests (tests/io): a fresh self-signed P-256 certificate
// for "localhost" and its key, made with OpenSSL's API at test time and written as PEM files
// to TEST_TMPDIR. No key is committed.
#ifndef FAIRSCHED_TESTS_IO_TEST_CERTIFICATES_H_
#define FAIRSCHED_TESTS_IO_TEST_CERTIFICATES_H_

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fairsched::testing {

struct CertificateFiles {
  std::string certificate;
  std::string key;
};

// Writes a fresh self-signed certificate for "localhost" and its key as PEM files named
// <dir>/<name>.crt and .key. Test-only keys: made per run, never committed.
inline CertificateFiles MakeSelfSigned(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string base = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* certificate = X509_new();
  if (key == nullptr || certificate == nullptr) ADD_FAILURE() << "OpenSSL allocation failed";
  X509_set_version(certificate, 2);  // v3, for the subjectAltName extension
  ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1);
  X509_gmtime_adj(X509_getm_notBefore(certificate), -3600);
  X509_gmtime_adj(X509_getm_notAfter(certificate), 24 * 3600);
  X509_set_pubkey(certificate, key);
  X509_NAME* subject = X509_get_subject_name(certificate);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(certificate, subject);  // self-signed
  X509V3_CTX extensions;
  X509V3_set_ctx_nodb(&extensions);
  X509V3_set_ctx(&extensions, certificate, certificate, nullptr, nullptr, 0);
  X509_EXTENSION* alt_name =
      X509V3_EXT_conf_nid(nullptr, &extensions, NID_subject_alt_name, "DNS:localhost");
  X509_add_ext(certificate, alt_name, -1);
  X509_EXTENSION_free(alt_name);
  EXPECT_GT(X509_sign(certificate, key, EVP_sha256()), 0);
  CertificateFiles files{base + ".crt", base + ".key"};
  FILE* out = std::fopen(files.certificate.c_str(), "w");
  EXPECT_EQ(PEM_write_X509(out, certificate), 1);
  std::fclose(out);
  out = std::fopen(files.key.c_str(), "w");
  EXPECT_EQ(PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  std::fclose(out);
  X509_free(certificate);
  EVP_PKEY_free(key);
  return files;
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_TEST_CERTIFICATES_H_

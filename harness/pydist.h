/* pydist.h - which installed Python distribution a loaded file belongs to, read from the file system
 * alone (nothing is imported): for a file under a site-packages or dist-packages folder, the
 * *.dist-info folders there are read (METADATA's Name and Version, RECORD's path,sha256=...,size lines,
 * PEP 376 / PEP 627) and the file's SHA-256 is compared with the hash its RECORD line states. */
#ifndef DKB_PYDIST_H
#define DKB_PYDIST_H

struct pydist; /* the site-packages folders read so far, each read once */

struct pydist_match {
  char name[128], version[64];   /* from METADATA */
  char dist_info[4400];          /* the .dist-info folder */
  char record_hash[128];         /* the RECORD line's hash field, "" when the line has none */
  int record_match;              /* 1 the hashes agree, 0 they differ, -1 RECORD states no sha256 */
};

struct pydist *pydist_new(void);
void pydist_free(struct pydist *d);
/* 1 and *m filled when path (a real path) is listed in the RECORD of a distribution installed in the
 * site-packages folder it lies in; sha256 is the file's digest (hex); 0 when no distribution lists it. */
int pydist_lookup(struct pydist *d, const char *path, const char sha256[65], struct pydist_match *m);
/* The RECORD form of a hex SHA-256: "sha256=" + urlsafe base64 without padding (out: 51 bytes). */
void pydist_record_hash(const char sha256[65], char out[52]);

#endif

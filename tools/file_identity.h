/* Whether two paths name one file, so that a command can refuse to overwrite its input. */
#ifndef SMLA_TOOLS_FILE_IDENTITY_H
#define SMLA_TOOLS_FILE_IDENTITY_H

/* 1 when both paths exist and are the same file (the same device and inode: also through
 * another spelling, a symbolic link or a hard link), else 0. */
int smla_tool_same_file(const char *a, const char *b);

#endif

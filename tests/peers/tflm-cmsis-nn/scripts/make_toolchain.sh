#!/usr/bin/env bash
# Wrappers around Debian's arm-none-eabi-gcc 12 that add the unpacked newlib/libstdc++ ($WORK/sysroot)
# include and library folders for the multilib the flags select. TFLM's Makefile gets
# TARGET_TOOLCHAIN_ROOT=$WORK/toolchain/bin/ so that it neither downloads a GCC nor needs newlib
# installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
B=$WORK/toolchain/bin
mkdir -p "$B"
for tool in ar as ld nm objcopy objdump size readelf strip ranlib gcc-ar; do
  ln -sf "/usr/bin/arm-none-eabi-$tool" "$B/arm-none-eabi-$tool"
done
for lang in gcc g++; do
cat > "$B/arm-none-eabi-$lang" <<WRAP
#!/usr/bin/env bash
S=$WORK/sysroot/usr
m=()
for a in "\$@"; do case "\$a" in -mcpu=*|-mfpu=*|-mfloat-abi=*|-mthumb|-march=*) m+=("\$a");; esac; done
multi=\$(/usr/bin/arm-none-eabi-gcc "\${m[@]}" -print-multi-directory)
inc=()
if [ "$lang" = g++ ]; then
  inc+=(-isystem "\$S/include/newlib/c++/12.2.1" -isystem "\$S/include/newlib/c++/12.2.1/arm-none-eabi/\$multi")
fi
inc+=(-isystem "\$S/include/newlib")
exec /usr/bin/arm-none-eabi-$lang "\${inc[@]}" "\$@" -L"\$S/lib/arm-none-eabi/newlib/\$multi"
WRAP
chmod +x "$B/arm-none-eabi-$lang"
done
echo "$B"
